"""Structural checks (citegraph.tools.verifier.checks): each rule fires on the conflict it is written for
and stays quiet on the supported reading of the same premise; ``<spec>+checks`` caps a verifier's score.
The sentences here are invented for these tests (none is from the minimal-pair suite)."""

from __future__ import annotations

import pytest

from citegraph.errors import InputError
from citegraph.tools.verifier import (
    CheckedVerifier,
    FunctionVerifier,
    check_verifier_spec,
    clear_verifier_cache,
    find_conflicts,
    get_verifier,
    register_verifier,
)


def kinds(premise: str, claim: str) -> list[str]:
    return [f.kind for f in find_conflicts(premise, claim)]


LAB = ("The Orvik laboratory tested the new vaccine on 400 volunteers in March 2021. "
       "The vaccine protected adults against the virus. It did not protect infants.")


@pytest.mark.parametrize("claim, kind", [
    ("The new vaccine did not protect adults against the virus.", "negation"),  # a negation added
    ("The Orvik vaccine protected infants against the virus.", "negation"),  # one removed
    ("The Orvik laboratory tested the new vaccine on 300 volunteers.", "number"),  # a number changed
    ("The Orvik laboratory tested the new vaccine on 400 volunteers in May 2021.", "number"),  # a month
    ("The Halden laboratory tested the new vaccine on 400 volunteers in March 2021.", "name"),
])
def test_each_rule_fires_on_its_conflict(claim, kind):
    assert kinds(LAB, claim) == [kind]


@pytest.mark.parametrize("claim", [
    "The Orvik laboratory tested the new vaccine on 400 volunteers.",
    "In March 2021 the new vaccine was tested on four hundred volunteers by the Orvik laboratory.",
    "The vaccine did not protect infants against the virus.",  # the premise's own negation
    "The vaccine protected adults.",
    "The vaccine, tested on 400 volunteers, protected adults against the virus.",  # two sentences joined
])
def test_supported_readings_pass(claim):
    assert kinds(LAB, claim) == []


def test_antonyms_are_read_in_the_sentence_the_claim_aligns_with():
    premise = ("Shares of Brannock Mills rose 6 percent on Friday after strong sales. "
               "Shares of its rival fell after a weak forecast.")
    assert kinds(premise, "Shares of Brannock Mills fell 6 percent on Friday after strong sales.") == ["antonym"]
    assert kinds(premise, "Shares of Brannock Mills rose on Friday.") == []
    # the antonym's pair also works for prefixed opposites
    assert kinds("The drug was ineffective against the fungus in the Tarrow trial.",
                 "The drug was effective against the fungus in the Tarrow trial.") == ["antonym"]


def test_role_swaps_with_the_passive_voice_taken_into_account():
    premise = "In 2019 Velmont acquired Krusto for 80 million euros."
    assert kinds(premise, "In 2019 Krusto acquired Velmont for 80 million euros.") == ["role"]
    assert kinds(premise, "Velmont was acquired by Krusto in 2019.") == ["role"]
    assert kinds(premise, "Krusto was acquired by Velmont in 2019.") == []
    assert kinds(premise, "Velmont bought Krusto in 2019.") == []
    # a phrase after a passive verb is not its agent; names listed together are not roles
    assert kinds("Idris Kell won an award for Tallow in 2015.", "An award was won by Idris Kell for Tallow.") == []
    assert kinds("Velmont and Krusto merged in 2019.", "Krusto and Velmont merged in 2019.") == []


def test_the_two_sides_of_a_comparison_trading_places():
    premise = ("A trial in Orvik found that the new filter removed more lead than the old carbon filter, "
               "but it cost twice as much. Households reported more than 300 complaints.")
    assert kinds(premise, "The old carbon filter removed more lead than the new filter.") == ["role"]
    assert kinds(premise, "The Orvik trial found the new filter removed more lead than the old carbon filter.") == []
    # the opposite comparative with the sides swapped says the same thing: neither rule flags it
    assert kinds(premise, "The old carbon filter removed less lead than the new filter.") == []
    # one change alone is a conflict: the opposite comparative with the sides kept
    assert kinds(premise, "The new filter removed less lead than the old carbon filter.") == ["antonym"]
    assert kinds("The Nile is longer than the Amazon.", "The Amazon is shorter than the Nile.") == []
    assert kinds("The Nile is longer than the Amazon.", "The Nile is shorter than the Amazon.") == ["antonym"]
    assert kinds("The Nile is longer than the Amazon.", "The Amazon is longer than the Nile.") == ["role", "swap"]
    assert kinds(premise, "Households reported more than 300 complaints.") == []  # a bound, not a comparison
    f = find_conflicts(premise, "The old carbon filter removed more lead than the new filter.")[0]
    assert "'old carbon' and 'new' trade sides of 'more ... than'" in str(f)


def test_a_name_of_the_premise_put_in_another_names_place():
    premise = ("Dr. Lena Ford led the team at Carrow University that sequenced the genome of the Arctic char. "
               "Her colleague, Dr. Samuel Okafor, designed the software used to assemble the data.")
    assert kinds(premise, "Dr. Samuel Okafor led the team at Carrow University that sequenced the genome.") == ["swap"]
    assert kinds(premise, "Dr. Lena Ford led the team at Carrow University.") == []
    assert kinds(premise, "Dr. Samuel Okafor designed the software used to assemble the data.") == []
    f = find_conflicts(premise, "Dr. Samuel Okafor led the team at Carrow University.")[0]
    assert str(f) == "swap: the claim has 'Samuel Okafor' where its premise sentence has 'Lena Ford'"
    # the words between a slot and a later name left out, so that the later name takes the slot
    cup = "The 2014 FIFA World Cup was held in Brazil, and Germany won it by beating Argentina 1-0 in the final."
    assert kinds(cup, "The 2014 FIFA World Cup was held in Argentina.") == ["swap"]
    assert kinds(cup, "The 2014 FIFA World Cup was held in Brazil.") == []
    assert kinds(cup, "Germany won the 2014 FIFA World Cup by beating Argentina.") == []
    # a list is not a slot; a demonym is not another name; a name the premise never uses is the name rule's
    assert kinds("The film was shot in Paris and Berlin in 1998.", "The film was shot in Berlin in 1998.") == []
    assert kinds("Andrea Pirlo plays for the Italy national team. He was born in Flero.",
                 "Andrea Pirlo plays for the Italian national team.") == []
    assert kinds(premise, "Dr. Maria Costa led the team at Carrow University.") == ["name"]


def test_number_in_another_slot_of_the_premise():
    premise = "The Sorn dam is 140 metres high and holds 310 million cubic metres of water."
    assert kinds(premise, "The Sorn dam is 310 metres high.") == ["number"]
    assert kinds(premise, "The Sorn dam is 140 metres high.") == []


def test_bounds_hedges_and_acronyms_are_not_conflicts():
    assert kinds("The bridge opened in 1874.", "The bridge opened before 1900.") == []
    assert kinds("The trial might change the treatment of asthma.",
                 "The trial might or might not change the treatment of asthma.") == []
    assert kinds("A heart attack is diagnosed with an electrocardiogram of the patient.",
                 "A heart attack (AMI) is diagnosed with an electrocardiogram (ECG) of the patient.") == []
    assert kinds("Heavy rain did not only flood the streets of Pellan; it also closed the schools.",
                 "Heavy rain flooded the streets of Pellan.") == []
    assert find_conflicts("", "Anything.") == [] and find_conflicts("Anything.", " ") == []


def test_a_word_swapped_for_another_word_of_the_premise():
    """A near-copy of one premise sentence with one word taken from elsewhere in the premise (an LLM
    mixing up two rules of one document); a sentence that another premise sentence fully holds, a word
    the premise never uses, or two words changed are left to the verifier."""
    premise = ("Figure captions should be placed below the figure and centred if on one line. "
               "Table captions should be placed above the table and centred if on one line.")
    assert kinds(premise, "Table captions should be placed below the figure and centred if on one line.") == ["swap"]
    assert kinds(premise, "Figure captions should be placed below the figure.") == []
    assert kinds(premise, "Figure legends should be placed below the figure and centred if on one line.") == []
    assert kinds(premise, "Table captions should be placed above the table.") == []
    (f,) = find_conflicts(premise, "Table captions should be placed below the figure and centred if on one line.")
    assert str(f) == "swap: the claim has 'Table' where its premise sentence has 'Figure'"


def test_findings_say_what_they_saw():
    (f,) = find_conflicts(LAB, "The Orvik laboratory tested the new vaccine on 300 volunteers.")
    assert f.kind == "number" and "300" in str(f)


@pytest.fixture
def stub():
    clear_verifier_cache()
    register_verifier("stub:high", FunctionVerifier(lambda p, h: 0.95, spec="stub:high"))
    yield
    clear_verifier_cache()


def test_checks_spec_caps_flagged_pairs_and_keeps_the_rest(stub):
    v = get_verifier("stub:high+checks")
    assert isinstance(v, CheckedVerifier) and v.spec == "stub:high+checks" and v.threshold == 0.5
    pairs = [(LAB, "The new vaccine did not protect adults against the virus."),
             (LAB, "The vaccine protected adults against the virus.")]
    assert v.score(pairs) == [0.1, 0.95]
    assert v.entails_many(pairs) == [False, True]
    assert v.flagged == 1 and v.flagged_by == {"negation": 1}
    assert [f.kind for f in v.explain(*pairs[0])] == ["negation"]
    v.score(pairs)  # cached: nothing counted twice
    assert v.flagged == 1 and v.stats is v.base.stats and v.stats.pairs_scored == 2 and v.stats.cache_hits == 4


def test_checks_spec_is_validated_with_its_base(stub):
    assert check_verifier_spec("default+checks") == "default+checks"
    assert check_verifier_spec("stub:high+checks") == "stub:high+checks"
    with pytest.raises(InputError, match="unknown verifier spec 'nope'"):
        check_verifier_spec("nope+checks")
    with pytest.raises(InputError):
        check_verifier_spec("+checks")
    with pytest.raises(ValueError, match="unknown check"):
        CheckedVerifier(FunctionVerifier(lambda p, h: 1.0), rules=("negation", "spelling"))


def test_a_low_score_is_never_raised(stub):
    register_verifier("stub:low", FunctionVerifier(lambda p, h: 0.03, spec="stub:low"))
    v = get_verifier("stub:low+checks")
    assert v.score([(LAB, "The new vaccine did not protect adults against the virus.")]) == [0.03]
    assert v.flagged == 0


def test_a_thing_made_the_subject_of_what_a_person_did():
    premise = ("Marta Velk was a Danish architect. She is best known for the Orvik Library and for her work on the "
               "harbour bridge in Aarhus.")
    assert kinds(premise, "The library is also known for its work on the harbour bridge in Aarhus.") == ["role"]
    assert kinds(premise, "Velk is known for her work on the harbour bridge in Aarhus.") == []
    assert kinds(premise, "The architect is best known for the Orvik Library.") == []


def test_two_common_nouns_trading_sides_of_a_verb():
    assert kinds("The committee fined the club 20,000 euros after the final.",
                 "The club fined the committee 20,000 euros after the final.") == ["role"]
    premise = "The cat was chased by the dog through the garden."
    assert kinds(premise, "The cat chased the dog through the garden.") == ["role"]  # voice taken into account
    assert kinds(premise, "The dog chased the cat through the garden.") == []
    assert kinds("The nurse thanked the patient for the flowers.",
                 "The patient was thanked by the nurse for the flowers.") == []
    # a verb whose two sides may trade places says the same thing
    assert kinds("The captain met the coach before the match in Leeds.",
                 "The coach met the captain before the match in Leeds.") == []


def test_negation_past_an_aside_and_no_longer():
    premise = "The update fixes the login bug. It does not, however, add a dark mode."
    assert kinds(premise, "The update adds a dark mode.") == ["negation"]
    assert kinds(premise, "The update does not add a dark mode.") == []
    assert kinds("The museum still opens on Mondays and charges no entry fee.",
                 "The museum no longer opens on Mondays.") == ["negation"]
    # "no longer" may restate a premise's verb of removing
    assert kinds("The chain is scrapping its self-service tills in all its stores.",
                 "Shoppers will no longer find self-service tills in the stores of the chain.") == []


def test_a_name_moved_at_the_claims_end_after_a_title_or_across_a_clause():
    premise = "The company Orvella, founded in Lyon, makes drones. Last year it opened an office in Porto."
    assert kinds(premise, "The company Orvella was founded in Porto.") == ["swap"]
    assert kinds(premise, "The company Orvella was founded in Lyon.") == []
    # ... unless another sentence says the claim's verb of that name
    roles = ("Mara Quinn won wider fame in 2019 after landing the roles of Elena Voss in Northern Lights and Tom Reyes "
             "in Ashfall. That same year she headlined the series Glassworks, portraying the chemist Elena Marsh.")
    assert kinds(roles, "Mara Quinn portrayed the role of Elena Marsh.") == []
    match = "Goalkeeper Ines Varga saved two penalties as Kestrel FC won the cup. Defender Mia Holt scored the winner."
    assert kinds(match, "Mia Holt saved two penalties as Kestrel FC won the cup.") == ["swap"]
    assert kinds(match, "Ines Varga saved two penalties as Kestrel FC won the cup.") == []
    river = "The Orra River flows mainly through the county of Dunmore, and a small part of its basin lies in Kelby."
    assert kinds(river, "The Orra River flows mainly through the county of Kelby.") == ["swap"]
    assert kinds(river, "The Orra River flows mainly through the county of Dunmore.") == []


def test_a_number_one_plain_step_from_the_premises():
    goals = "Midfielder Ana Costa scored twice as Orla FC beat Dunmore 4-2."
    assert kinds(goals, "Ana Costa scored 2 goals as Orla FC beat Dunmore 4-2.") == []
    assert kinds(goals, "Ana Costa scored 3 goals as Orla FC beat Dunmore 4-2.") == ["number"]
    seats = "Half of the 60 seats on the Orla council went to the Green Party in May."
    assert kinds(seats, "The Green Party won 30 of the 60 seats on the Orla council in May.") == []
    assert kinds(seats, "The Green Party won 20 of the 60 seats on the Orla council in May.") == ["number"]
    tudor = "The Tudor dynasty ruled England from 1485 to 1603."
    assert kinds(tudor, "The Tudors ruled England for 118 years, from 1485 to 1603.") == []
    assert kinds(tudor, "The Tudors ruled England for 120 years, from 1485 to 1603.") == ["number"]
    later = "Mira Olsen won the national title in 2011. Three years later, she moved to Oslo to study law."
    assert kinds(later, "Mira Olsen moved to Oslo in 2014 to study law.") == []
    assert kinds(later, "Mira Olsen moved to Oslo in 2013 to study law.") == ["number"]


def test_no_more_than_a_number_is_a_bound():
    assert kinds("The concert sold out within three hours of going on sale.",
                 "It took no more than three hours for the concert to sell out.") == []
    assert kinds("Turnout in the vote rose sharply and was higher than in 2019.",
                 "Turnout in the vote was not higher than in 2019.") == ["negation"]


def test_who_did_it_when_the_premise_names_the_other_by_a_pronoun():
    premise = ("Nora Lind studied under the painter Piet Aalders in Ghent for two years. "
               "Aalders later called her the finest pupil he had taught.")
    assert kinds(premise, "Nora Lind called Piet Aalders the finest pupil she had taught.") == ["role"]
    assert kinds(premise, "Piet Aalders called Nora Lind the finest pupil he had taught.") == []
    f = find_conflicts(premise, "Nora Lind called Piet Aalders the finest pupil she had taught.")[0]
    assert str(f) == "role: the premise says 'Aalders called her': 'Aalders' did it, not 'Lind'"


def test_two_values_or_two_opposites_trading_names():
    lakes = "Lake Orvan, at 84 metres, is deeper than its neighbour Lake Tessel, which reaches 52 metres."
    assert kinds(lakes, "Lake Tessel reaches 84 metres, while Lake Orvan is 52 metres deep.") == ["role"]
    assert kinds(lakes, "Lake Orvan reaches 84 metres, while Lake Tessel is 52 metres deep.") == []
    farms = "After the war Anna Berg took the northern farm, while her brother Karl Berg kept the southern one."
    assert kinds(farms, "Anna Berg took the southern farm, while Karl Berg kept the northern one.") == ["role"]
    assert kinds(farms, "Anna Berg took the northern farm, while Karl Berg kept the southern one.") == []
    # two names in one clause: which of them a value belongs to is not read
    assert kinds("Google acquired YouTube for 1.65 billion dollars in 2006.",
                 "YouTube was acquired by Google for 1.65 billion dollars in 2006.") == []


def test_of_two_sentences_sharing_as_many_content_words_the_claim_aligns_with_the_closer_wording():
    # "tower" and "France" stand in the first sentence, "gift" and "France" in the last: the claim copies the last
    premise = ("The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France. "
               "The Statue of Liberty is a colossal copper statue on Liberty Island in New York. "
               "The statue was a gift from the people of France to the people of the United States.")
    assert kinds(premise, "The tower was a gift from France.") == ["swap"]
    assert kinds(premise, "The statue was a gift from France.") == []


def test_a_number_of_the_premise_put_in_another_numbers_place():
    premise = ("By week twelve, patients given the new inhaler had 2.6 fewer asthma attacks per month than before. "
               "Those on the old inhaler had 0.9 fewer attacks.")
    claim = "By week twelve, patients given the new inhaler had 0.9 fewer asthma attacks per month."
    assert kinds(premise, claim) == ["swap"]
    assert str(find_conflicts(premise, claim)[0]) == (
        "swap: the claim has 0.9 where its premise sentence has 2.6, a number the premise gives for something else")
    assert kinds(premise, "By week twelve, patients given the new inhaler had 2.6 fewer asthma attacks per month.") == []
    assert kinds(premise, "Patients on the old inhaler had 0.9 fewer attacks.") == []


def test_a_relation_between_two_names_turned_round():
    family = "Lucille Ball starred in the show with her daughter Lucie Arnaz in 1968."
    assert kinds(family, "Lucie Arnaz is the daughter of Lucille Ball.") == []
    assert kinds(family, "Lucille Ball is the daughter of Lucie Arnaz.") == ["role"]
    chess = "Ines Moll beat her older sister Carla in the final of the Tarrow chess championship."
    assert kinds(chess, "Ines Moll is the older sister of Carla.") == ["role"]
    assert kinds(chess, "Carla is the older sister of Ines Moll.") == []
    firms = "Orvia supplies the chips used by Kestrel. Kestrel, in turn, is Orvia's largest customer."
    assert kinds(firms, "Orvia is Kestrel's largest customer.") == ["role"]
    assert kinds(firms, "Kestrel is Orvia's largest customer.") == []
    # a mutual relation says the same both ways
    assert kinds("Ines Moll played her cousin Carla Brun in the final.", "Carla Brun is the cousin of Ines Moll.") == []
    f = find_conflicts(family, "Lucille Ball is the daughter of Lucie Arnaz.")[0]
    assert str(f) == ("role: the claim makes 'Lucille Ball' the daughter of 'Lucie Arnaz'; "
                      "the premise says it the other way round")


RACE = ("The 2024 Tolvik half marathon drew 2,310 finishers, up from 1,980 the year before. "
        "The operating margin of its sponsor improved from 8 percent to 11 percent. "
        "Three in ten runners were over fifty. The new chip timer logs 60 splits per second, four times as many "
        "splits as the old one. The winner finished in 1 hour, 4 minutes and 9 seconds.")


@pytest.mark.parametrize("claim", [
    "The Tolvik half marathon had 330 more finishers in 2024 than the year before.",  # a difference
    "The sponsor's operating margin rose by three percentage points, to 11 percent.",  # in points
    "Thirty percent of the Tolvik runners were over fifty.",  # a share as a percentage
    "The old chip timer logged 15 splits per second.",  # a stated multiple
    "The Tolvik winner finished in 1:04:09.",  # a clock time's components
])
def test_numbers_computed_from_the_premise_are_not_conflicts(claim):
    assert kinds(RACE, claim) == []


@pytest.mark.parametrize("claim", [
    "The Tolvik half marathon had 430 more finishers in 2024 than the year before.",  # a wrong difference
    "The sponsor's operating margin improved by 3 percent.",  # a difference of percentages is in points
    "The old chip timer logged 15 finishers per second.",  # the multiple, but of another unit
    "The Tolvik half marathon drew 2,310 finishers in 2027.",  # a sum of two numbers is never a year
])
def test_numbers_not_computed_from_the_premise_still_conflict(claim):
    assert kinds(RACE, claim) == ["number"]


@pytest.mark.parametrize("premise, claim", [
    ("The council declined to fund the new stadium in Arvik.", "The council agreed to fund the new stadium in Arvik."),
    ("The judge ruled out a retrial for the Arvik defendant.", "The judge ordered a retrial for the Arvik defendant."),
    ("The club said the striker has not yet signed a new contract with Arden.",
     "The striker has signed a new contract with Arden."),
])
def test_refusals_and_not_yet_are_negations(premise, claim):
    assert kinds(premise, claim) == ["negation"]


@pytest.mark.parametrize("premise, claim", [
    ("The minister refused to comment on the Arvik report.", "The minister declined to comment on the Arvik report."),
    ("The club said the striker has not yet signed a new contract with Arden.",
     "The striker has yet to sign a new contract with Arden."),
    ("Arvik's sales declined to 40 units in May.", "Arvik's sales fell to 40 units in May."),  # not a refusal
    ("The mayor was fined for refusing to sign the Arvik budget.", "The mayor refused to sign the Arvik budget."),
])
def test_refusals_restated_are_not_conflicts(premise, claim):
    assert kinds(premise, claim) == []


# a converse says the same thing with its two sides traded; the same word with the sides traded does not
MILL = ("Orvane Paper sold its Tessby mill to the packaging group Hallmere for 40 million euros. "
        "Hallmere finished the refit two months ahead of Orvane's own schedule.")


@pytest.mark.parametrize("claim", [
    "Hallmere, a packaging group, bought Orvane Paper's Tessby mill for 40 million euros.",
    "Orvane's own schedule had the refit finishing two months behind Hallmere.",
])
def test_a_converse_with_its_sides_traded_is_not_a_conflict(claim):
    assert kinds(MILL, claim) == []


@pytest.mark.parametrize("claim", [
    "Hallmere sold its Tessby mill to Orvane Paper for 40 million euros.",  # the sides traded, the verb kept
    "Orvane Paper bought the Tessby mill from Hallmere for 40 million euros.",  # the converse, the sides kept
])
def test_a_converse_with_its_sides_kept_or_a_verb_with_its_sides_traded_conflicts(claim):
    assert kinds(MILL, claim) in (["antonym"], ["role"], ["antonym", "role"], ["role", "antonym"], ["swap"])


def test_a_clause_that_opens_with_before_reads_as_its_converse():
    premise = "Ilse Marn joined the Arvik orchestra in 2015 after leaving the Dunmore choir."
    assert kinds(premise, "Before the Arvik orchestra took her on in 2015, Ilse Marn left the Dunmore choir.") == []
    assert kinds(premise, "Ilse Marn joined the Arvik orchestra in 2015 before leaving the Dunmore choir.") == ["antonym"]


def test_a_converse_adjective_before_its_noun_is_still_an_opposite():
    # "younger brother" relates the brother to his owner; the verb's sides are another matter
    premise = "Tomas Berg defeated his older brother Erik in the final of the Arvik chess open."
    assert "antonym" in kinds(premise, "Erik Berg defeated his younger brother Tomas in the final of the Arvik chess open.")


LEDGER = ("The Kessby ferry carried 84,000 passengers in 2024, up from 80,500 passengers the year before. Its three engines "
          "deliver 2,700 kilowatts in all. The crossing was cut from 52 to 45 minutes. Nina Varg earns an annual "
          "salary of 60,000 euros, paid in twelve monthly instalments. A fifth of the sailings were late; 15 per cent "
          "of the 2,000 seats are reserved. The 1,200 lifejackets on board are ten times the 120 carried in 1990. "
          "The Holm fleet's Vega 2 boats carried 9,000 cars. The harbour wall took half a century to build.")


@pytest.mark.parametrize("claim", [
    "The Kessby ferry carried 80,500 passengers in 2023.",  # "the year before"
    "Each of the Kessby ferry's three engines delivers 900 kilowatts.",  # a total divided, the same unit
    "The Kessby ferry crossing is seven minutes quicker than before.",  # a difference worded "quicker"
    "Nina Varg is paid 5,000 euros a month.",  # the same currency, divided by a factor the sentence gives
    "About 20 percent of the sailings were late.",  # a fraction as a percentage
    "300 of the 2,000 seats are reserved.",  # a share the premise gives as a percentage
    "The ferry now carries ten times as many lifejackets as in 1990.",  # the ratio of two counts
    "The Holm fleet's boats carried 9,000 cars.",  # the 2 of a name is not a count of boats
    "The harbour wall took about fifty years to build.",  # half a century
])
def test_more_numbers_computed_from_the_premise_are_not_conflicts(claim):
    assert kinds(LEDGER, claim) == []


@pytest.mark.parametrize("claim", [
    "The Kessby ferry carried 80,500 passengers in 2022.",  # not the year before
    "The Kessby ferry's engines deliver 900 kilowatts.",  # no word that says it divides
    "The Kessby ferry crossing is eight minutes quicker than before.",  # a wrong difference
    "About 25 percent of the sailings were late.",  # not a fifth
    "400 of the 2,000 seats are reserved.",  # not 15 per cent
])
def test_numbers_one_step_off_still_conflict(claim):
    assert kinds(LEDGER, claim) == ["number"]


def test_a_negation_ends_where_a_clause_of_time_opens():
    premise = "The Orra canal froze on 3 January 1947 and did not thaw until 9 March 1947."
    assert kinds(premise, "The Orra canal stayed frozen until 9 March 1947.") == []
    assert kinds(premise, "The Orra canal thawed on 3 January 1947.") != []


DRUGS = ("Morvastin can raise the level of the blood thinner Keldarin in the body. "
         "The Arvik trial was led by Ines Holt and funded by Orvane Health.")


def test_two_names_the_other_way_round_around_the_same_words_conflict():
    assert "role" in kinds(DRUGS, "Keldarin can raise the level of Morvastin in the body.")
    assert kinds(DRUGS, "Morvastin can raise the level of Keldarin in the body.") == []
    assert kinds(DRUGS, "The level of Keldarin in the body can be raised by Morvastin.") == []  # the passive


def test_names_in_two_coordinated_phrases_are_not_one_verbs_sides():
    assert kinds(DRUGS, "Orvane Health funded the Arvik trial led by Ines Holt.") == []


def test_a_converse_of_time_leaves_the_role_rules_on():
    premise = "Orvia acquired Kestrel in 2019, two years after the Halden merger."
    assert "role" in kinds(premise, "Kestrel acquired Orvia in 2019, two years before the Halden merger.")


# session 29: a converse with one party unnamed, arithmetic across sentences, the same verb with names reordered
STUD = "Kestrel Bay was bred by Norah Quill and sold as a yearling to the Fenwick Stud."


def test_a_converse_with_one_side_in_a_relative_clause_says_the_same():
    assert kinds(STUD, "Norah Quill bred Kestrel Bay, which the Fenwick Stud bought as a yearling.") == []
    plant = "The Daleford recycling plant sells its sorted aluminium to the Graystone smelter."
    assert kinds(plant, "The Graystone smelter buys sorted aluminium from the Daleford recycling plant.") == []
    assert "antonym" in kinds(plant, "The Daleford recycling plant buys its sorted aluminium from the Graystone smelter.")


def test_a_converse_of_time_still_needs_both_sides_traded():
    premise = "Just before the storm reached the coast, the boys had been comparing their kites."
    assert "antonym" in kinds(premise, "The boys were comparing their kites just after the storm reached the coast.")


PORTS = ("The port of Kallisund handled 2.3 million containers in 2023. Its main rival, Dorvik, handled 1.7 million in "
         "the same year. Between 2012 and 2022 the Torvald colony fell from 4,800 pairs to 3,100 pairs. The morning "
         "ferry will leave at 7:15 instead of 6:40. Anselm Ridd spent three decades collecting in the uplands. The "
         "hospice cared for 640 patients, about a quarter of whom were admitted. Of 31 recommendations, the government accepted 18 in full and 7 in part, and rejected "
         "the remainder.")


@pytest.mark.parametrize("claim", [
    "Kallisund handled 600,000 more containers than Dorvik in 2023.",  # across two sentences, in millions
    "The Torvald colony lost 1,700 pairs between 2012 and 2022.",  # a count written like a year
    "The morning ferry will leave 35 minutes later than before.",  # two clock times
    "Anselm Ridd spent thirty years collecting in the uplands.",  # three decades
    "About 160 of the hospice's 640 patients were admitted.",  # a quarter of whom
    "The government rejected six of the 31 recommendations.",  # the remainder
])
def test_plain_arithmetic_on_the_premise_numbers_is_not_a_conflict(claim):
    assert kinds(PORTS, claim) == []


@pytest.mark.parametrize("premise,claim", [
    ("Team Corvane beat Ashfall Gaming 3-1 in the final.", "Team Corvane beat Ashfall Gaming 3-2 in the final."),
    ("Trains will run every 20 minutes instead of every 30. The fastest journey will be cut from 54 to 47 minutes.",
     "The fastest journey will be cut by 17 minutes."),
    ("The team of 23 volunteers spent nine hours on the rescue.", "The rescue involved 32 volunteers."),
    ("Sailings drop from ten to six a day. The timetable takes effect on 28 October.",
     "The timetable takes effect on 18 October."),
])
def test_a_number_that_only_happens_to_be_a_sum_or_difference_still_conflicts(premise, claim):
    assert "number" in kinds(premise, claim)


def test_a_claim_that_negates_what_the_premise_negates_too_agrees():
    premise = ("In 2023, revenue per available room rose 12 percent, driven by business travel in its city-centre hotels. "
               "The chain opened no new hotels during the year.")
    assert kinds(premise, "The chain added no hotels in 2023, yet its revenue per available room rose 12 percent.") == []


LEASE = ("Under a 2023 agreement, the Castellan Regional Blood Bank supplies platelets to St Oren's Hospital, and in "
         "return St Oren's screens all of the blood bank's donations. Kaizora Pearls bought a 60 per cent stake in "
         "Lorimer Bay Aquaculture in March.")


@pytest.mark.parametrize("claim", [
    "Under the 2023 agreement, St Oren's Hospital supplies platelets to the Castellan Regional Blood Bank.",
    "Lorimer Bay Aquaculture bought a 60 per cent stake in Kaizora Pearls in March.",  # the same verb, not a converse
])
def test_names_reordered_around_the_same_verb_conflict(claim):
    assert "role" in kinds(LEASE, claim)


def test_names_reordered_keep_the_right_order_agree():
    assert kinds(LEASE, "Kaizora Pearls bought a 60 per cent stake in Lorimer Bay Aquaculture in March.") == []
    assert kinds(LEASE, "The Castellan Regional Blood Bank supplies platelets to St Oren's Hospital.") == []


AIRCRAFT = ("Norrvik Air Technics found corrosion on an S-70 turboprop leased to Baltavia. Inspector Helga Minten signed "
            "off the repair after engineers from Kestrel Aero Services replaced two stringer sections. The game was "
            "designed by Ilse Varnholt. Artwork for the game is by Rune Castell.")


@pytest.mark.parametrize("claim", [
    "Norrvik Air Technics found corrosion on an S-70 turboprop leased to Kestrel Aero Services.",  # "leased to"
    "The game was designed by Rune Castell.",  # "designed by"
])
def test_a_name_from_elsewhere_in_another_names_slot_conflicts(claim):
    assert "swap" in kinds(AIRCRAFT, claim)


def test_a_name_in_its_own_slot_or_beside_a_shared_name_agrees():
    assert kinds(AIRCRAFT, "Engineers from Kestrel Aero Services replaced two stringer sections.") == []
    fab = ("Veltrix Semiconductor opened its Fab 7 in Orsana in 2019. A second plant, Fab 9, opened two years later "
           "near Kessick.")
    assert kinds(fab, "Veltrix's Kessick fab opened in 2021.") == []  # the word beside both is a name
    vedic = "Vedic Sanskrit is the ancient language of the Vedas of Hinduism."
    assert kinds(vedic, "Vedic Sanskrit is the language of the Vedic texts of Hinduism.") == []  # one name's two forms


def test_a_word_negated_by_a_prefix_conflicts_unless_hedged():
    premise = "Coastal towns were affected by the storm, and the results were consistent with the forecast."
    assert "antonym" in kinds(premise, "Coastal towns were unaffected by the storm.")
    assert "antonym" in kinds(premise, "The results were inconsistent with the forecast.")
    weather = "Warming could make weather patterns unpredictable around the world."
    assert kinds(weather, "Warming could make weather patterns around the world less predictable.") == []
    assert kinds(premise, "Coastal towns were affected by the storm.") == []


APIARY = ("The Harrowfield Apiary Society manages 42 hives above Lenmoor. Its founder, Osric Tallent, introduced a "
          "mite-resistant strain of bee called the Kelda line in 2011. Tallent's daughter Wenna now chairs the society.")


def test_what_the_premise_says_of_another_subject_conflicts():
    assert "swap" in kinds(APIARY, "Wenna Tallent introduced the mite-resistant Kelda line in 2011.")
    assert kinds(APIARY, "Osric Tallent introduced the mite-resistant Kelda line in 2011.") == []


def test_a_name_joined_to_what_another_sentence_says_of_something_else_agrees():
    premise = "The Sarn River floods almost every spring. Most of the damage occurs in Holby, a village built on its banks."
    assert kinds(premise, "Holby is a village on the banks of a river that floods almost every spring.") == []


def test_a_converse_of_position_still_needs_both_sides_traded():
    premise = ("The drain hose may be connected to a sink trap or a standpipe, but its highest point must be no more "
               "than 100 cm above the floor.")
    assert "antonym" in kinds(premise, "The drain hose can be connected as long as its highest point stays below 100 cm.")


def test_a_negation_is_read_against_every_sentence_the_claim_aligns_with():
    premise = ("Harbour Flight 12 left Orvik on 3 May and ditched in the Tarn estuary after both engines failed. "
               "The flight's pilots, Ana Brel and Tom Dace, glided the plane to the water.")
    assert "negation" in kinds(premise, "Harbour Flight 12 did not have any pilots.")
    assert kinds(premise, "Harbour Flight 12 did not reach an airport.") == []  # nothing there says it did


@pytest.mark.parametrize("claim", [
    "Varga Textiles still uses chrome mordants at its Szelnic dyehouse.",
    "The Lautmoor mill has shut down its bleaching line.",
])
def test_what_goes_on_against_what_stopped_conflicts(claim):
    premise = ("Varga Textiles stopped using chrome mordants at its Szelnic dyehouse in 2022. At the Lautmoor mill, "
               "the bleaching line remains in operation.")
    assert "negation" in kinds(premise, claim)


def test_what_stopped_said_as_stopped_agrees():
    premise = "Varga Textiles stopped using chrome mordants at its Szelnic dyehouse in 2022."
    assert kinds(premise, "Varga Textiles no longer uses chrome mordants at its Szelnic dyehouse.") == []


def test_an_opposite_the_premise_negates_is_not_a_conflict():
    premise = "Conservators found that the psalter's original oak boards had not been discarded but were stored apart."
    assert kinds(premise, "The psalter's original oak boards were kept and stored apart.") == []
    assert "antonym" in kinds("The vault declined a donation of tulip bulbs last year.",
                              "The vault accepted a donation of tulip bulbs last year.")


def test_a_claim_restating_a_premise_negation_with_a_negative_verb_agrees():
    premise = "The winter market will no longer accept sales from unregistered foragers, the council announced."
    assert kinds(premise, "The council said unregistered foragers will be barred from selling at the market.") == []
    banned = "The pesticide was not banned by the regional council."
    assert "negation" in kinds(banned, "The pesticide was banned by the regional council.")


def test_a_negation_does_not_reach_past_during():
    premise = "The Carrow Point lifeboat did not launch during the storm of 12 February because its slipway was damaged."
    assert kinds(premise, "Its slipway damaged, the Carrow Point lifeboat stayed ashore during the 12 February storm.") == []


@pytest.mark.parametrize("premise,claim", [
    ("The new chairlift, which cost CHF 14.5 million, carried 1.84 million skiers.",
     "The chairlift cost CHF 14.5 million."),  # a currency code is not a name
    ("Only 38% of households held flood cover in 2023. Among renters the figure fell to 19%.",
     "Fewer than one in five renters held flood cover in 2023."),
    ("The collection holds 212 watercolours. Her sister made plates from 64 of them. The remaining paintings were "
     "never published.", "Of the 212 watercolours, 148 were never published."),
])
def test_more_plain_arithmetic_is_not_a_conflict(premise, claim):
    assert kinds(premise, claim) == []


def test_one_in_five_still_conflicts_with_a_share_far_from_it():
    premise = "Only 38% of households held flood cover in 2023. Among renters the figure fell to 9%."
    assert "number" in kinds(premise, "Fewer than one in five renters held flood cover in 2023.")
    assert "number" in kinds(premise, "Roughly one in five renters held flood cover in 2023.")


def test_one_in_zero_is_a_number_conflict_not_a_crash():
    premise = "Among renters in the Wendle estuary, 19% held flood cover in 2023."
    assert kinds(premise, "Fewer than one in 0 renters in the Wendle estuary held flood cover in 2023.") == ["number"]
