"""Spoken forms for TTS (data_gen.speech.spoken) and the WER normalisation that shares them (toolcore.wer)."""

import random
import re
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from data_gen.numbers import number_words
from data_gen.slots import clock_forms, display_time, duration_forms
from data_gen.speech.spoken import SPOKEN_KEEP, SPOKEN_PUNCT_STRIP, to_spoken
from toolcore.spoken import clock_words, spoken_form
from toolcore.wer import corpus_wer, normalize_for_wer, wer, wer_details

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "default"

# written request -> what a voice reads (kinds of text found in data/default and the tool phrasings)
CASES = [
    # clock times
    ("Set an alarm for 7:30 AM", "Set an alarm for seven thirty AM"),
    ("wake me at 7:05 pm", "wake me at seven oh five PM"),
    ("make a quick reminder at 15:30 to rake the leaves", "make a quick reminder at fifteen thirty to rake the leaves"),
    ("remind me at 8:00 AM", "remind me at eight AM"),
    ("waking me up at 18:00, plus", "waking me up at eighteen hundred, plus"),
    ("Hey, I'd like an alarm at 7:28.", "Hey, I'd like an alarm at seven twenty eight."),
    ("set me an alarm for 5:55, thanks", "set me an alarm for five fifty five, thanks"),
    ("at 12:00", "at twelve o'clock"),
    ("it's 12:00 noon", "it's twelve noon"),
    ("i need to remember this at 6:50 p.m.: call the pharmacy.",
     "i need to remember this at six fifty PM: call the pharmacy."),
    ("Ok, make sure I'm up at 6:30 a.m. and after that", "Ok, make sure I'm up at six thirty AM and after that"),
    ("I've got an early start, wake me up at 9:30am.", "I've got an early start, wake me up at nine thirty AM."),
    ("Program the alarm to 6am and", "Program the alarm to six AM and"),
    ("call my brother at 9 am today", "call my brother at nine AM today"),
    # shouted text is said in lower case: espeak-ng spells out short capitalised words ("IT", "US")
    ("DON'T LET ME SLEEP PAST 10:00 P.M.. ALSO", "don't let me sleep past ten PM. also"),
    ("WAKE ME UP AT 6 A.M.; TELL ME", "wake me up at six AM; tell me"),
    ("IN SAULT STE. MARIE THANKS, CAN U TEXT US", "in sault sainte marie thanks, can you text us"),
    ("at 9:00 PM,um, wake me", "at nine PM,um, wake me"),
    ("at 7.30am", "at seven thirty AM"),
    ("at eight pm and seven thirty-five pm", "at eight PM and seven thirty-five PM"),
    # durations and plain numbers
    ("could you time me for 45 minutes thanks", "could you time me for forty five minutes thanks"),
    ("Can you set 1.5 hours uh, on the clock", "Can you set one and a half hours uh, on the clock"),
    ("begin a 50-minute countdown", "begin a fifty minute countdown"),
    ("COUNT DOWN FROM 12 MINS", "count down from twelve minutes"),
    ("run a timer, 6 min.", "run a timer, six minutes."),
    ("a 1 min timer", "a one minute timer"),
    ("turn right by 90 degrees", "turn right by ninety degrees"),
    ("top 10 links for who won the world cup in 2018?", "top ten links for who won the world cup in twenty eighteen?"),
    ("the 1st result", "the first result"),
    ("3.5", "three point five"),
    ("1,000,000 people", "one million people"),
    # arithmetic for the calculator
    ("could you check what 18**2 comes to", "could you check what eighteen squared comes to"),
    ("21**3?", "twenty one cubed?"),
    ("2**10", "two to the power of ten"),
    ("Do the math: sqrt(484) + 14", "Do the math: the square root of four hundred eighty four plus fourteen"),
    ("sqrt(256) - 32", "the square root of two hundred fifty six minus thirty two"),
    ("HOW MUCH IS SQRT(289) - 16 EXACTLY",
     "how much is the square root of two hundred eighty nine minus sixteen exactly"),
    ("what 44/11 equals", "what forty four divided by eleven equals"),
    ("What's 48 * 39", "What's forty eight times thirty nine"),
    ("calc 453 x 198 - 36; sum: 14**2",
     "calc four hundred fifty three times one hundred ninety eight minus thirty six; sum: fourteen squared"),
    ("Work this out for me: 92*101-6 real quick!",
     "Work this out for me: ninety two times one hundred one minus six real quick!"),
    ("find the answer to 34-6-14", "find the answer to thirty four minus six minus fourteen"),
    ("Um, sqrt(100) - 29 =", "Um, the square root of one hundred minus twenty nine equals"),
    ("hey assistant, 21 / 7 =?", "hey assistant, twenty one divided by seven equals?"),
    ("15% of 80", "fifteen percent of eighty"),
    ("10 % 3", "ten modulo three"),
    ("-5 degrees outside", "minus five degrees outside"),
    ("7 - -3", "seven minus minus three"),
    ("(3 + 4) * 2", "three plus four times two"),
    # symbols, quotes, abbreviations, names with digits
    ("Just play me Earth, Wind & Fire.", "Just play me Earth, Wind and Fire."),
    ("start r&b and royals", "start r and b and royals"),
    ('message "I\'ll book the restaurant" to Khalid,,, also', "message I'll book the restaurant to Khalid, also"),
    ('text "great game today" to him', "text great game today to him"),
    ("pass a message on to Emerson: landed safely, pls find Zofia.",
     "pass a message on to Emerson: landed safely, please find Zofia."),
    ("Msg Vladimir: first day went well", "message Vladimir: first day went well"),
    ("java hashmap vs hashtable", "java hashmap versus hashtable"),
    ("my friend lives in St. Louis", "my friend lives in Saint Louis"),
    ("Can we have Dr. Dre?", "Can we have Doctor Dre?"),
    ("play some 60s pop", "play some sixties pop"),
    ("all out 2000s", "all out two thousands"),
    ("any chance we could play Summer of '69?", "any chance we could play Summer of sixty nine?"),
    ("web search for beginner 5k training plan", "web search for beginner five K training plan"),
    ("is there any way to play deadmau5?", "is there any way to play deadmau five?"),
    ("Put on UB40 while I study", "Put on UB forty while I study"),
    ("Yo, crank up U2.", "Yo, crank up U two."),
    ("i feel like hearing p!nk.", "i feel like hearing pink."),
    ("how about playing back in black by ac/dc", "how about playing back in black by ac dc"),
    ("hi, can i get *nsync", "hi, can i get nsync"),
    ("convert string to int in c++, also", "convert string to int in c plus plus, also"),
    ("#1 hits", "number one hits"),
    ("okay so put 63 + 22er, into the calculator", "okay so put sixty three plus twenty two er, into the calculator"),
    ("Party in the U.S.A. by Miley Cyrus", "Party in the U.S.A. by Miley Cyrus"),
    # words without a written form stay exactly as they are
    ("Schedule a wake-up call for half past seven", "Schedule a wake-up call for half past seven"),
    ("What is the forecast for Nürnberg today", "What is the forecast for Nürnberg today"),
    ("Sweet Child O' Mine by Guns N' Roses", "Sweet Child O Mine by Guns N Roses"),
]

# real generated requests (test split of data/default), so the round trip runs on a fresh clone too
UTTERANCES = [
    "Hey there, can you tell me what itme it is right now and put 156 minutes on the clock please?",
    "I can't figure out 589 + 585 in my head, then dig up Callum's mobile number.",
    "listen, i can't forget this, remind me to make a grocery list at 10:00 AM, thank you.",
    "quickly work out 370 / 10",
    "Would you mind waking me at 6:50 AM, also check what's to the left",
    "Can you please quickly tell me what 44/11 equals, then say what time it is, and put 20 minutes on the clock?",
    "could you mke sure i'm up by 1:40 PM, also how do i get hold of Min-ji?",
    "Hi, compute 279+74, plus spin epic orchestral.",
    "remind me to call the pharmacy at seven thirty-five pm real quick.",
    "Could you please quickly tell me how much seven minus eleven is. Also, slve 32 divided by 444 over 12 for me?",
    "yo, run like, the numbers on 12**2 and just play some children's songs and also look right!",
    "Okay so make a quick reminder at 15:30 to rake the leaves.",
    "i need to remember this at 6:50 p.m.: call the pharmacy.",
    "Can you please add a quick reminder for 10:58 in the morning to leave for the airport?",
    "HEY ASSISTANT, HOW MUCH IS SQRT(289) - 16 EXACTLY, AND GIVE ME A QUICK TIME CHECK?",
    "so one hundred and twenty-five degrees to the right. also, give me the temperature in asuncion please.",
    "i um, keep forgetting things, remind me to turn in the essay at 6:30pm and set a five minute timer",
    "Calc sqrt(256) + 2. Also, hmm, help me figure out 266 / 216 / 6!",
    "could you set up a quick reminder to call my brother at 9 am today. also, play some 60s pop?",
    "Any chance you could remind me to put the bins out at 9:05 in the morning and add a new reminder for 2 p.m.: take",
    "Could you please set me an alarm at 16:31, thank you?",
    "i want to message Francesca: can you help me with something, find 50s rock and roll, the value of 196/7+793",
    "WILL YOU WAKE ME UP AT 6 A.M.; TELL ME WHAT IT'S LIKE OUTSIDE IN SAULT STE. MARIE THANKS?",
    "message \"I'll book the restaurant\" to Khalid,,, also look up the contact for Rafael",
    "please drop Dina a line: happy birthday buddylike,, plus find the contact for Linda!",
    "Play R.E.M..",
    "could you switch on party in the u.s.a. by miley cyrus, and start a timer: 75 minutes",
    "Can you set 1.5 hours uh, on the clock",
    "calc 453 x 198 - 36; sum: 14**2",
    "Punch 826*10you know, into the calculator and also check this: 240/12!",
    "yo, work this out for me: 14-722hmm,, also play backyard barbecue in the bedroom real quick",
    "kick off the playlist with Strobe by deadmau5 and also web search for how to learn to code for free",
    "Search this: who won the world cup in 2018",
    "hey, play Highway to Hell by AC/DC",
    "Just play me Earth, Wind & Fire.",
    "hi, i'm packing for L.A., what's the weather like theer and then add a reminder in my phone for 2:30 PM",
    "Put the square root of 225 minus 1like, into the calculator",
    "Um, sqrt(100) - 29 =",
    "hey assistant, 21 / 7 =?",
    "GIVE ME A 10-MINUTE CUNTDOWN.",
]


def _data_sample(n: int = 500) -> list[str]:
    if not DATA.exists():
        return []
    from datasets import load_from_disk

    texts = load_from_disk(str(DATA))["test"]["user_text"]
    return random.Random(0).sample(list(texts), min(n, len(texts)))


@pytest.mark.parametrize("written,said", CASES)
def test_to_spoken_cases(written, said):
    assert to_spoken(written) == said


def test_case_table_is_large_and_clean():
    assert len(CASES) >= 40
    for _, said in CASES:
        assert not re.search(r"\d", said)
        assert not set(said) & SPOKEN_PUNCT_STRIP


@pytest.mark.parametrize("a,b", [
    ("Set an alarm for 7:30 a.m.", "set an alarm for seven thirty a m"),
    ("Set an alarm for 7:30 AM", "set an alarm for seven thirty am"),
    ("7:30am", "Seven thirty A.M."),
    ("wake me at 7:05 pm", "wake me at seven oh five p.m."),
    ("at 8 o'clock", "at eight oclock"),
    ("at 8:00", "at eight o'clock"),
    ("twenty-five minutes", "25 minutes"),
    ("one hundred and twenty-five degrees", "125 degrees"),
    ("15% of 80", "fifteen percent of eighty"),
    ("sqrt(256) - 32", "the square root of two hundred fifty-six minus thirty-two"),
    ("12**2", "twelve squared"),
    ("What's the weather in Bogotá?", "what's the weather in bogota"),
    ("um, play U.S.A. songs", "play USA songs"),
    ("ok, 1.5 hours", "okay one and a half hours"),
])
def test_normalize_for_wer_equates_written_and_spoken(a, b):
    assert normalize_for_wer(a) == normalize_for_wer(b)


def test_normalize_for_wer_shape():
    assert normalize_for_wer("Set an alarm for 7:30 a.m.") == ["set", "an", "alarm", "for", "seven", "thirty", "am"]
    # recognisers with word timestamps give "7:30" and "a.m." apart: normalised word by word, the same words
    assert [w for word in ("Set", "an", "alarm", "for", "7:30", "a.m.") for w in normalize_for_wer(word)] \
        == normalize_for_wer("set an alarm for seven thirty a m")
    assert [w for word in ("12:00", "PM", "and", "70", "-", "5") for w in normalize_for_wer(word)] \
        == normalize_for_wer("twelve PM and seventy minus five")
    assert normalize_for_wer("I'm LATE, don't wait!") == ["i'm", "late", "don't", "wait"]
    assert normalize_for_wer("uh, hmm, call Bob", drop_fillers=False) == ["uh", "hmm", "call", "bob"]
    assert normalize_for_wer("") == []


@pytest.mark.parametrize("text", UTTERANCES + _data_sample())
def test_round_trip(text):
    said = to_spoken(text)
    assert not re.search(r"\d", said)
    assert normalize_for_wer(said) == normalize_for_wer(text)


def test_generator_spoken_forms_match():
    """The slot generator's own word forms and our reading of its digit forms are the same words."""
    for h in range(24):
        for m in range(60):
            words = f"{number_words(h % 12 or 12)}{'' if m == 0 else ' ' + clock_words(0, m).split(' ', 1)[1]}"
            assert normalize_for_wer(display_time(h, m)) == normalize_for_wer(f"{words} {'am' if h < 12 else 'pm'}")
            for form in clock_forms(h, m, bare_am=True):
                assert not re.search(r"\d", to_spoken(form))
    for n in range(1, 181):
        digits, said = duration_forms(n)[:2]
        assert normalize_for_wer(digits) == normalize_for_wer(said)
    for a in range(2, 31):
        assert normalize_for_wer(f"{a}**2") == normalize_for_wer(f"{a} squared")
        assert normalize_for_wer(f"sqrt({a * a}) - {a}") == normalize_for_wer(f"the square root of {a * a} minus {a}")
        assert normalize_for_wer(f"{a * 7} / 7 + {a}") == normalize_for_wer(f"{a * 7} divided by 7 plus {a}")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_any_text_is_spoken_without_digits_or_stray_symbols(text):
    said = to_spoken(text)
    assert isinstance(said, str)
    assert not re.search(r"\d", said)
    assert not set(said) & SPOKEN_PUNCT_STRIP
    # only letters (with their accents), single spaces and the punctuation that shapes prosody
    assert all(c.isalpha() or unicodedata.category(c).startswith("M") or c == " " or c in SPOKEN_KEEP for c in said)
    assert isinstance(normalize_for_wer(text), list)
    assert spoken_form(text) == spoken_form(text)          # deterministic


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["7:30", "12", "3.5", "am", "pm", " ", " ", "+", "-", "*", "**", "/", "%", "=",
                                 "sqrt(", ")", "(", "min", "1st", "60s", "$", "&", "#", "'", '"', ",", ".", "?",
                                 "x", "St.", "Louis", "a.m.", "AC/DC"]), max_size=20).map("".join))
def test_symbol_soup_never_raises_or_leaves_digits(text):
    said = to_spoken(text)
    assert not re.search(r"\d", said)
    assert not set(said) & SPOKEN_PUNCT_STRIP


def test_wer_sanity():
    assert wer("set an alarm for seven", "Set an alarm for 7.") == 0.0
    assert wer("call my mom now", "call my dad now") == 0.25
    assert wer("hi", "oh hi there you know what") > 1
    assert wer("a b c d", "a c d") == 0.25                    # one deletion
    assert wer("", "") == 0.0 and wer("", "something") == 1.0 and wer("two words", "") == 1.0
    d = wer_details("set a timer for ten minutes", "set the timer for 10 minutes please")
    assert (d.substitutions, d.deletions, d.insertions, d.hits) == (1, 0, 1, 5)
    assert wer(["a", "b"], ["a", "c"]) == 0.5                   # word lists are taken as normalised
    assert corpus_wer([("a b c d", "a b c d"), ("e f", "e g")]) == pytest.approx(1 / 6)
