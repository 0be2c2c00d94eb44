"""Running a method: one question (``runner.answer_item``) or a data set (``runner.run_dataset``:
resumable, journalled, many workers through ``workqueue``), the items read by ``datasets`` and each
record stamped by ``provenance``. ``citegraph ask``/``cite``/``run`` and the evaluator's ``bench``
run methods through here."""
