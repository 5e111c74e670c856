"""Grounded calls (runtime/grounding.py): which values a request states, and what happens to a call
whose values it does not. The engine's side (withdraw, rewind, answer in words) is in test_engine.py."""

from __future__ import annotations

import pytest

from runtime.grounding import StatedValues, conversation_texts, ground_call
from toolcore.conversation import Conversation, Message
from toolcore.schema import Tool, ToolCall


def said(text: str) -> StatedValues:
    return StatedValues.of([text])


@pytest.mark.parametrize("text, value", [
    ("set a timer for forty-five minutes", 45),
    ("the pasta needs one hundred and fifty one minutes", 151),
    ("wake me at half past five", 17),               # a clock reading, either half of the day
    ("wake me at half past five", 30),
    ("quarter to eight in the morning", 7),
    ("time me for an hour and a half", 90),
    ("at an interest rate of 5%", 0.05),
    ("a dozen eggs", 12),
    ("over the past decade", 10),
    ("a loan of 2,500 dollars", 2500),
    ("charges of 1e-9 and 2e-9", 2e-9),
    ("drop it by 3 degrees", -3),
    ("what's the weather", 0),                      # 0 and 1 are defaults people leave unsaid
])
def test_numbers_said_in_digits_words_clocks_and_durations_are_stated(text, value):
    assert said(text).states_number(value)


@pytest.mark.parametrize("text, value", [
    ("thrown straight upwards with a velocity of 5 m/s", 9.8),
    ("what's the time right now?", 10),
    ("the magnetic field at distance 'r' from a wire carrying current 'I'", 100),
    ("set a timer for 25 minutes", 52),
])
def test_numbers_no_one_said_are_not_stated(text, value):
    assert not said(text).states_number(value)


def test_a_string_is_stated_by_any_of_its_words_also_after_numbers_become_digits():
    assert said("how much is seven minus eleven").states_string("7 - 11")
    assert said("is it cold in new york today").states_string("New York, NY")
    assert said("add a reminder at seven thirty this evening").states_string("7:30 PM")
    assert said("remind me to water the plants at noon").states_string("12:00 PM")     # a number said another way
    assert not said("what is the next meteor shower?").states_string("2022-01-01")   # 0 and 1 are no evidence
    assert not said("do I need a coat in Winnipeg today").states_string("Vancouver")
    assert not said("identify the blood cells responsible for clotting").states_string("phospholipid bi-layer")


@pytest.mark.parametrize("text, value", [
    ("find charging stations for Palm Beach", "Palm Beach, Florida"),
    ("what is the ranking of Manchester United in Premier League?", "Manchester City"),
    ("text Noah saying happy anniversary", "Nathaniel Noah"),
    ("what is a holy book?", "Holy Bible"),
])
def test_a_capitalised_word_no_one_said_makes_a_value_up_whatever_else_it_says(text, value):
    assert not said(text).states_string(value)


@pytest.mark.parametrize("text, value, stated", [
    ("the exchange rate from British pounds to Japanese yen", "JPY", True),
    ("the exchange rate from British pounds to Japanese yen", "GBP", True),
    ("convert 150 Euros to Canadian dollars", "CAD", True),
    ("translate it into French", "fr", True),
    ("translate it into French", "de", False),
    ("I have 100 euro", "JPY", False),
])
def test_a_currency_or_language_code_is_stated_by_what_people_say_for_it(text, value, stated):
    """The forms the training data realises these codes in (toolcore/canonical.py): grounding withdrew the
    right GBP / JPY call its own data had taught."""
    assert said(text).states_string(value) is stated


def test_training_data_and_grounding_read_the_same_canonical_forms():
    from data_gen.schema_driven import values
    from toolcore import canonical

    assert values.CURRENCIES is canonical.CURRENCIES and values.LANGUAGES is canonical.LANGUAGES


@pytest.mark.parametrize("text, value", [
    ("is it cold in new york today", "New York, NY"),           # under 4 letters: a state's code
    ("stats for player LeBron James", "LeBron James"),          # a capital inside a word is not a word's start
    ("remind me about the meeting at noon", "Meeting"),         # the user's word, capitalised
    ("weather in zurich", "Zürich"),
])
def test_a_capitalised_word_the_user_said_in_any_case_or_alphabet_stays_stated(text, value):
    assert said(text).states_string(value)


@pytest.mark.parametrize("text, value", [
    ("locate a pharmacy in Limassol, then also for Köln", "Köln"),      # [a-z] words were "k" and "ln"
    ("weather in Zurich please", "Zürich"),                             # accents said or not
    ("weather in Zürich please", "Zurich"),
    ("a table at Café Ñandú", "Ñandú"),
])
def test_a_string_in_any_alphabet_is_stated_by_its_words(text, value):
    assert said(text).states_string(value)
    assert not said("locate a pharmacy in Turku").states_string(value)


TOOL = Tool("loan", "Monthly payment of a loan", {
    "type": "object",
    "properties": {"amount": {"type": "number"}, "years": {"type": "integer"},
                   "currency": {"type": "string", "enum": ["USD", "EUR"]}, "insured": {"type": "boolean"},
                   "bank": {"type": "string"}, "rate": {"type": "number"}},
    "required": ["amount", "years"]})


def test_an_unstated_required_value_withdraws_the_call():
    g = ground_call(ToolCall("loan", {"amount": 1000, "years": 30}), [TOOL], said("a loan of 1000 euros"))
    assert g.call is None and g.withdrawn_for == "years=30"


def test_an_unstated_optional_value_is_dropped_and_the_call_stands():
    call = ToolCall("loan", {"amount": 1000, "years": 5, "rate": 4.5, "bank": "Chase"})
    g = ground_call(call, [TOOL], said("a five year loan of 1000 euros at Chase"))
    assert g.call == ToolCall("loan", {"amount": 1000, "years": 5, "bank": "Chase"}) and g.dropped == ["rate"]


CONE = Tool("cone_volume", "Volume of a cone", {"type": "object", "properties": {
    "radius": {"type": "number"}, "height": {"type": "number"}, "round_off": {"type": "integer"}},
    "required": ["radius", "height"]})


@pytest.mark.parametrize("text, kept", [
    ("volume of a cone with radius 4 and height 7", {"radius": 4, "height": 7}),           # 4 said once
    ("radius four, height seven", {"radius": 4, "height": 7}),                             # in words too
    ("radius 4, height 7, rounded to 4 places", {"radius": 4, "height": 7, "round_off": 4}),   # said twice
    ("radius 400% of 1, height 7 and 4 places", {"radius": 4, "height": 7, "round_off": 4}),   # 400% is 4 too
])
def test_an_optional_number_that_repeats_a_number_said_once_is_dropped(text, kept):
    call = ToolCall("cone_volume", {"radius": 4, "height": 7, "round_off": 4})
    g = ground_call(call, [CONE], StatedValues.of([text], [text]))
    assert g.call == ToolCall("cone_volume", kept)
    assert g.dropped == ([] if "round_off" in kept else ["round_off"])


RANKING = Tool("sports_ranking", "Ranking of a team", {"type": "object", "properties": {
    "team": {"type": "string"}, "league": {"type": "string"}, "season": {"type": "string"}},
    "required": ["team"]})


@pytest.mark.parametrize("text, args, kept", [
    # an optional string that repeats the required one, said once: dropped
    ("ranking of Manchester City please", {"team": "Manchester City", "league": "manchester city "},
     {"team": "Manchester City"}),
    # two optional ones: the first written stays
    ("ranking of Leeds, season Premier", {"team": "Leeds", "league": "Premier", "season": "Premier"},
     {"team": "Leeds", "league": "Premier"}),
    # said twice: both meant
    ("Premier ranking of Leeds in the Premier", {"team": "Leeds", "league": "Premier", "season": "Premier"},
     {"team": "Leeds", "league": "Premier", "season": "Premier"}),
    ("ranking of Leeds in the Premier League", {"team": "Leeds", "league": "Premier League"},
     {"team": "Leeds", "league": "Premier League"}),
])
def test_an_optional_string_that_repeats_a_string_said_once_is_dropped(text, args, kept):
    g = ground_call(ToolCall("sports_ranking", args), [RANKING], StatedValues.of([text], [text]))
    assert g.call == ToolCall("sports_ranking", kept)
    assert g.dropped == [k for k in args if k not in kept]


def test_a_required_string_is_never_dropped_for_repeating_another():
    tool = Tool("route", "Route between places", {"type": "object", "properties": {
        "start": {"type": "string"}, "end": {"type": "string"}}, "required": ["start", "end"]})
    text = "a route from Paris"
    g = ground_call(ToolCall("route", {"start": "Paris", "end": "Paris"}), [tool], StatedValues.of([text], [text]))
    assert g.call == ToolCall("route", {"start": "Paris", "end": "Paris"})


SOLAR = Tool("solar_need", "Solar panels a home needs", {"type": "object", "properties": {
    "square_footage": {"type": "number"}, "sunlight_hours": {"type": "number"}, "a": {"type": "number"},
    "c": {"type": "number"}, "hour": {"type": "integer"}, "minute": {"type": "integer"}},
    "required": ["square_footage", "sunlight_hours"]})


@pytest.mark.parametrize("text, args, withdrawn", [
    ("how much power for my 2000 sq ft home?", {"square_footage": 2000, "sunlight_hours": 2000}, True),
    ("2000 sq ft and 2000 hours of sun", {"square_footage": 2000, "sunlight_hours": 2000}, False),
    ("2000 sq ft, 5 hours of sun", {"square_footage": 2000, "sunlight_hours": 5}, False),
    # 0 and 1 are left unsaid ("x^2 + 1": a and c are 1), and a clock pair reads one time twice
    ("2000 sq ft, x^2 + 1", {"square_footage": 2000, "sunlight_hours": 1, "a": 1, "c": 1}, False),
    ("2000 sq ft, 7 hours of sun, at 3:15 PM", {"square_footage": 2000, "sunlight_hours": 7, "hour": 15, "minute": 15},
     False),
])
def test_two_required_numbers_that_share_a_number_said_once_withdraw_the_call(text, args, withdrawn):
    g = ground_call(ToolCall("solar_need", args), [SOLAR], StatedValues.of([text], [text]))
    assert (g.call is None) == withdrawn
    if not withdrawn:
        assert g.call.arguments == args and not g.dropped
    else:
        assert g.withdrawn_for == "square_footage=2000 (said once, also sunlight_hours)"


def test_enums_booleans_and_unoffered_tools_are_not_judged():
    # the choices are the schema's: a request that names them keeps them, whatever words it uses
    # (one that names them not at all loses them: tests/test_choices.py)
    call = ToolCall("loan", {"amount": 1000, "years": 5, "currency": "EUR", "insured": True})
    assert ground_call(call, [TOOL], said("a five year loan of 1000 in euros, with insurance")).call == call
    stray = ToolCall("other", {"x": 123})
    assert ground_call(stray, [TOOL], said("nothing here")).call == stray


def test_every_message_of_the_conversation_can_state_a_value():
    conv = Conversation([Message.text("system", "The user lives in Lisbon."), Message.text("user", "weather at home?"),
                         Message.text("tool", '{"phone": "555-0199"}', name="lookup")], [])
    stated = StatedValues.of(conversation_texts(conv))
    assert stated.states_string("Lisbon") and stated.states_string("555-0199")


def test_a_string_the_user_nearly_said_is_copied_from_their_words():
    stated = StatedValues.of(["Play Bohemian Rhapsody."], said=["Play Bohemian Rhapsody."])
    assert stated.snap("Bohmian Rhapsody") == "Bohemian Rhapsody"
    remind = StatedValues.of([], said=["remind me to make a grocery list at 1:35pm"])
    assert remind.snap("make grocery list") == "make a grocery list"
    assert remind.snap("1:35 PM") == "1:35 PM"               # digits: canonical forms are left alone
    assert remind.snap("groceries") == "groceries"           # nothing near enough
    # a word cut short or given an ending becomes the user's whole word
    assert StatedValues.of([], said=["Remind me about the meeting at 3:00 PM."]).snap("meet") == "meeting"
    assert StatedValues.of([], said=["remind me to stretch at 4:00 PM"]).snap("stretching") == "stretch"
    assert StatedValues.of([], said=["the meeting, then meet Bo"]).snap("meet") == "meet"   # said whole too
    # a possessive is no ending: the name stays the name
    assert StatedValues.of([], said=["What is Jane's cell number again"]).snap("Jane") == "Jane"
    assert StatedValues.of([], said=["bring up Eun-ji's contact info"]).snap("Eun-ji") == "Eun-ji"
    assert remind.snap("grocery list") == "grocery list"     # already the user's words


@pytest.mark.parametrize("text, written, whole", [
    ("recipient email address erik_k@acme.org, subject economics", "Erik_K", "erik_k@acme.org"),
    ("invite oleg@company.io to the launch", "oleg", "oleg@company.io"),
    ("the status of flight ID22210 and A17325", "22210", "ID22210"),       # a piece of a word with digits
    ("message oleg at oleg@company.io", "oleg", None),                     # said whole outside the address
    ("the event on 2025-06-03", "2025", None),                             # not glued: a date's year stays
    ("flights ID22210 and ID22211", "2221", None),                         # two words fit
    ("check the Leipzig-Halle airport", "Leipzig", None),                  # letters only: `snap`'s business
])
def test_a_piece_of_an_address_or_identifier_becomes_the_whole(text, written, whole):
    assert request(text).whole_token(written) == whole


def test_ground_call_writes_the_whole_address_but_not_for_a_name():
    mail = Tool("send_email", "Send an email", {"type": "object", "properties": {
        "to": {"type": "string", "description": "Recipient email address"},
        "name": {"type": "string", "description": "Recipient's name"}}, "required": ["to"]})
    text = "email erik_k@acme.org about the launch"
    g = ground_call(ToolCall("send_email", {"to": "Erik_K", "name": "Erik_K"}), [mail], request(text))
    assert g.call == ToolCall("send_email", {"to": "erik_k@acme.org", "name": "Erik_K"})
    # spaces around a value are the model's, never the user's
    g = ground_call(ToolCall("send_email", {"to": " erik_k@acme.org"}), [mail], request(text))
    assert g.call == ToolCall("send_email", {"to": "erik_k@acme.org"})


def test_ground_call_snaps_strings_but_never_enum_members():
    tool = Tool("play", "Play a song", {"type": "object", "properties": {
        "song": {"type": "string"}, "mode": {"type": "string", "enum": ["shufle", "repeat"]}}, "required": ["song"]})
    text = "play Bohemian Rhapsody on shuffle"
    g = ground_call(ToolCall("play", {"song": "Bohmian Rhapsody", "mode": "shufle"}), [tool],
                    StatedValues.of([text], said=[text]))
    assert g.call == ToolCall("play", {"song": "Bohemian Rhapsody", "mode": "shufle"})
    assert g.snapped == {"song": "Bohmian Rhapsody"}


@pytest.mark.parametrize("text, head, full", [
    ("a property costing $200,000 with 3% depreciation", 200, 200000),   # constrained JSON stops at the comma
    ("revenues of $1M in 2019 and $1.2M in 2020", 1.2, 1200000),
    ("a $20k loan", 20, 20000),
    ("1.5 million people", 1.5, 1500000),
    ("travel a distance of 600 m", 600, 600),                           # metres, not millions
    ("pay 200 now and 200,000 later", 200, 200),                        # 200 is also said on its own
])
def test_the_head_of_a_grouped_or_scaled_number_becomes_the_number(text, head, full):
    stated = said(text)
    assert stated.snap_number(head) == full and stated.states_number(full)


def test_ground_call_snaps_a_number_head_and_keeps_integers_integers():
    g = ground_call(ToolCall("loan", {"amount": 200, "years": 5}), [TOOL], said("a 5 year loan of $200,000"))
    assert g.call == ToolCall("loan", {"amount": 200000, "years": 5}) and g.snapped == {"amount": 200}
    assert isinstance(g.call.arguments["amount"], int)


ALARM = Tool("set_alarm", "Set an alarm for a given time", {"type": "object", "properties": {
    "hour": {"type": "integer", "description": "Hour to set the alarm for"},
    "minute": {"type": "integer", "description": "Minute to set the alarm for"}}, "required": ["hour", "minute"]})
TIMER = Tool("set_timer", "Set a countdown timer", {"type": "object", "properties": {
    "minutes": {"type": "integer", "description": "Number of minutes"}}, "required": ["minutes"]})


def request(text: str) -> StatedValues:
    return StatedValues.of([text], said=[text])


@pytest.mark.parametrize("text, written, read", [
    ("Could you wake me at half past six tomorrow morning?", (19, 0), (6, 30)),   # unstated: was withdrawn
    ("Set an alarm for 10:30 PM", (10, 30), (22, 30)),                          # stated, but the wrong half
    ("Set my alarm for 7 in the evening", (7, 0), (19, 0)),
    ("I have to be up by 4:45 a.m.", (19, 45), (4, 45)),
    ("wake me up at quarter past five", (17, 15), (17, 15)),    # no AM/PM said: either half stays
    ("wake me up at quarter past five", (19, 5), (5, 15)),
])
def test_a_clock_pair_is_read_from_the_one_clock_time_the_request_states(text, written, read):
    g = ground_call(ToolCall("set_alarm", dict(zip(("hour", "minute"), written))), [ALARM], request(text))
    assert g.call == ToolCall("set_alarm", dict(zip(("hour", "minute"), read)))
    assert g.read == {k: w for k, w, r in zip(("hour", "minute"), written, read) if w != r}
    off = ground_call(ToolCall("set_alarm", dict(zip(("hour", "minute"), written))), [ALARM], request(text), read=False)
    assert off.read == {} and (off.call is None or off.call.arguments == dict(zip(("hour", "minute"), written)))


def test_of_several_clock_times_a_call_takes_the_one_it_points_at():
    g = ground_call(ToolCall("set_alarm", {"hour": 4, "minute": 30}), [ALARM],
                    request("Remind me to call mom at 5 PM, and also set an alarm for 4:30 PM"))
    assert g.call == ToolCall("set_alarm", {"hour": 16, "minute": 30}) and g.read == {"hour": 4}
    two = ground_call(ToolCall("set_alarm", {"hour": 6, "minute": 30}), [ALARM], request("alarms at 6:30 AM and 7:00 AM"))
    assert two.call == ToolCall("set_alarm", {"hour": 6, "minute": 30}) and two.read == {}
    # no clock with that minute: the one with that hour ("10:05 PM" written as 10, 0 beside "7:00 PM")
    text = "set my alarm to ring at 10:05 PM, and while you're at it, set another at 7:00 PM please"
    assert ground_call(ToolCall("set_alarm", {"hour": 10, "minute": 0}), [ALARM], request(text)).call == \
        ToolCall("set_alarm", {"hour": 22, "minute": 5})
    # no clock with that hour: the one with that minute, never by :00 alone, never one of two
    mom = "Remind me to call mom at 5 PM, and also set an alarm for 4:30 PM"
    garbled = ground_call(ToolCall("set_alarm", {"hour": 12, "minute": 30}), [ALARM], request(mom))
    assert garbled.call == ToolCall("set_alarm", {"hour": 16, "minute": 30}) and garbled.read == {"hour": 12}
    assert ground_call(ToolCall("set_alarm", {"hour": 9, "minute": 0}), [ALARM], request(mom)).call is None
    twice = ground_call(ToolCall("set_alarm", {"hour": 9, "minute": 30}), [ALARM],
                        request("alarms at 6:30 AM and 7:30 AM"))
    assert twice.call is None
    # both halves of the day said for the same dial reading: no single one fits, the model's stays
    both = ground_call(ToolCall("set_alarm", {"hour": 18, "minute": 30}), [ALARM], request("alarms at 6:30 AM and 6:30 PM"))
    assert both.call == ToolCall("set_alarm", {"hour": 18, "minute": 30}) and both.read == {}


REMINDER = Tool("create_reminder", "Create a reminder", {"type": "object", "properties": {
    "title": {"type": "string"}, "time": {"type": "string", "description": "Time, e.g. 3:00 PM"}},
    "required": ["title", "time"]})


@pytest.mark.parametrize("text, written, read", [
    ("Remind me at 14:00 to stretch", "14:00 AM", "2:00 PM"),               # a 24-hour clock, an impossible string
    ("remind me to stretch at 5 pm", "5:00 AM", "5:00 PM"),                  # the wrong half
    ("remind me to stretch at 5 pm", "5:00am", "5:00pm"),                    # the model's own style is kept
    ("remind me to stretch at 7:45", "7:45 PM", "7:45 PM"),                  # no half said: the model's stays
    ("stretch at 5 PM and at 7 PM", "7:00 AM", "7:00 PM"),                   # of two, the one it points at
    ("stretch at 5 PM and at 6 PM", "7:00 AM", "7:00 AM"),                   # points at neither: not read
    # the one time the request says, as for a clock pair: the hour and the minute are read
    ("remind me to stretch at twenty-five to eight in the evening", "25:00 PM", "7:35 PM"),
    ("a reminder for half past seven this evening: stretch", "7:00 PM", "7:30 PM"),
    # a 24-hour time where the schema shows a 12-hour one: written in the schema's form
    ("Set a quick reminder at 14:00 to stretch", "14:00", "2:00 PM"),
    ("remind me to stretch at 9 pm", "21:00", "9:00 PM"),
    ("remind me to stretch at 9:15", "9:15", "9:15 AM"),                     # no half said: the written one
    ("remind me to stretch", "14:00", "14:00"),                              # no time said: not read
])
def test_a_12_hour_time_string_is_read_from_the_clock_the_request_fixes(text, written, read):
    g = ground_call(ToolCall("create_reminder", {"title": "stretch", "time": written}), [REMINDER], request(text))
    assert g.read == ({} if read == written else {"time": written})
    if g.call is not None:
        assert g.call.arguments["time"] == read


def test_no_clock_time_leaves_the_call_to_the_model():
    none = ground_call(ToolCall("set_alarm", {"hour": 19, "minute": 0}), [ALARM], request("set an alarm please"))
    assert none.call is None and none.withdrawn_for == "hour=19"
    # the clock is read from the request, not from an earlier turn or a tool result
    stated = StatedValues.of(["the meeting is at 3 PM", "wake me at 6 AM"], said=["wake me at 6 AM"])
    assert ground_call(ToolCall("set_alarm", {"hour": 15, "minute": 0}), [ALARM], stated).call.arguments["hour"] == 6


def test_an_unstated_minutes_value_is_read_from_the_duration_and_a_stated_one_is_kept():
    g = ground_call(ToolCall("set_timer", {"minutes": 15}), [TIMER], request("Put a timer on for an hour and a half"))
    assert g.call == ToolCall("set_timer", {"minutes": 90}) and g.read == {"minutes": 15}
    # 150 is 1.5 x 100, a percent-style reading of the hour and a half, not a duration anyone said
    g = ground_call(ToolCall("set_timer", {"minutes": 150}), [TIMER], request("Put a timer on for an hour and a half"))
    assert g.call == ToolCall("set_timer", {"minutes": 90})
    kept = ground_call(ToolCall("set_timer", {"minutes": 5}), [TIMER], request("a 5 minute timer and one for 10 minutes"))
    assert kept.call == ToolCall("set_timer", {"minutes": 5}) and kept.read == {}
    assert ground_call(ToolCall("set_timer", {"minutes": 15}), [TIMER], request("start a timer")).call is None


MED = Tool("set_medication_reminder", "Set a reminder to take a medication", {"type": "object", "properties": {
    "medication": {"type": "string"}, "time": {"type": "string", "description": "Time in HH:MM"}},
    "required": ["medication", "time"]})


@pytest.mark.parametrize("text, written, read", [
    ("set a reminder for aspirin at 7:10 AM", "7:10 AM", "07:10"),        # the schema's 24-hour form
    ("change my aspirin reminder to 13:45", "13:45 AM", "13:45"),
    ("aspirin at quarter past seven in the evening", "07:15", "19:15"),   # the wrong half
    ("aspirin at 7:15", "19:15", "19:15"),                                # no half said: the model's stays
])
def test_a_time_the_schema_wants_as_hh_mm_is_read_in_that_form(text, written, read):
    g = ground_call(ToolCall("set_medication_reminder", {"medication": "aspirin", "time": written}), [MED], request(text))
    assert g.call == ToolCall("set_medication_reminder", {"medication": "aspirin", "time": read})


def test_a_duration_in_hours_written_as_minutes_is_read_and_a_clock_number_is_no_duration():
    g = ground_call(ToolCall("set_timer", {"minutes": 1}), [TIMER], request("would you put on a timer for one hour"))
    assert g.call == ToolCall("set_timer", {"minutes": 60})
    # "9:10 am" says 10 only as a minute of the clock: a 10-minute timer is withdrawn
    g = ground_call(ToolCall("set_timer", {"minutes": 10}), [TIMER], request("set my alarm to go off at 9:10 am"))
    assert g.call is None and g.withdrawn_for == "minutes=10"
    said_too = request("a 10 minute timer and an alarm at 9:10 am")
    assert ground_call(ToolCall("set_timer", {"minutes": 10}), [TIMER], said_too).call == ToolCall("set_timer", {"minutes": 10})


def test_a_tool_with_a_clock_pair_and_a_duration_reads_both():
    room = Tool("book_room", "Book a meeting room", {"type": "object", "properties": {
        "start_hour": {"type": "integer"}, "start_minute": {"type": "integer"},
        "duration_minutes": {"type": "integer"}}, "required": ["start_hour", "start_minute", "duration_minutes"]})
    g = ground_call(ToolCall("book_room", {"start_hour": 3, "start_minute": 0, "duration_minutes": 30}), [room],
                    request("book the room at 3 PM for an hour"))
    assert g.call == ToolCall("book_room", {"start_hour": 15, "start_minute": 0, "duration_minutes": 60})


def test_a_reading_the_schema_refuses_is_not_used():
    twelve = Tool("alarm12", "Set an alarm", {"type": "object", "properties": {
        "hour": {"type": "integer", "minimum": 1, "maximum": 12}, "minute": {"type": "integer"},
        "period": {"type": "string", "enum": ["AM", "PM"]}}, "required": ["hour", "minute", "period"]})
    call = ToolCall("alarm12", {"hour": 10, "minute": 30, "period": "PM"})
    g = ground_call(call, [twelve], request("Set an alarm for 10:30 PM"))
    assert g.call == call and g.read == {}


EVENT = Tool("create_event", "Create a calendar event", {"type": "object", "properties": {
    "title": {"type": "string"}, "date": {"type": "string", "format": "date"},
    "start_time": {"type": "string", "description": "Start time in HH:MM"}}, "required": ["title", "date", "start_time"]})


@pytest.mark.parametrize("text, written, read", [
    ("create a calendar event called Standup on 2026-03-19 at 09:30", "2026-03-19", "09:30"),  # the date twice
    ("add Standup to my calendar for 2026-03-19, starting at 3 PM", "Standup", "15:00"),
    ("add Standup on 2026-03-19 at 3 PM and Review at 4 PM", "2026-03-19", "2026-03-19"),   # two clocks: not read
    ("add Standup on 2026-03-19", "2026-03-19", "2026-03-19"),                              # no clock: not read
    # "from one" may be an hour; the one time said with AM/PM is the time (a masked convert_timezone)
    ("add Standup on 2026-03-19 at 3 AM, moved from one city's time zone", "3 AM", "03:00"),
])
def test_a_time_parameter_holding_no_time_takes_the_one_clock_the_request_says(text, written, read):
    g = ground_call(ToolCall("create_event", {"title": "Standup", "date": "2026-03-19", "start_time": written}),
                    [EVENT], request(text), read=True)
    assert g.call is not None and g.call.arguments["start_time"] == read


MOVIE = Tool("rate_movie", "Rate a movie", {"type": "object", "properties": {
    "movie": {"type": "string"}, "stars": {"type": "integer"}}, "required": ["movie", "stars"]})
REMIND = Tool("create_reminder", "Create a reminder", {"type": "object", "properties": {
    "title": {"type": "string"}, "time": {"type": "string"}}, "required": ["title", "time"]})


@pytest.mark.parametrize("tool, text, call, fixed", [
    (MOVIE, "Rate a movie you watched called Open Water stars 7.", {"movie": "Open Water stars", "stars": 7},
     "Open Water"),
    (MOVIE, "rate Open Water stars: seven", {"movie": "Open Water stars", "stars": 7}, "Open Water"),
    (EVENT, "create an event called Open Water start time 06:15 on 2025-10-10",
     {"title": "Open Water start time", "date": "2025-10-10", "start_time": "06:15"}, "Open Water"),
    # the parameter's name is part of what was said, not followed by its value: it stays
    (REMIND, "add a reminder at seven thirty this evening about my tee time.",
     {"title": "tee time", "time": "7:30 PM"}, "tee time"),
    (MOVIE, "rate the movie Fallen Stars, 7 stars", {"movie": "Fallen Stars", "stars": 7}, "Fallen Stars"),
])
def test_a_string_that_runs_into_another_parameters_name_ends_before_it(tool, text, call, fixed):
    g = ground_call(ToolCall(tool.name, call), [tool], request(text))
    first = next(iter(call))
    assert g.call is not None and g.call.arguments[first] == fixed


def test_a_date_written_without_its_zeros_gets_them():
    g = ground_call(ToolCall("create_event", {"title": "Standup", "date": "2026-1-2", "start_time": "09:30"}),
                    [EVENT], request("create Standup on January 2, 2026 at 9:30"))
    assert g.call == ToolCall("create_event", {"title": "Standup", "date": "2026-01-02", "start_time": "09:30"})


def test_a_date_without_its_zeros_gets_them_where_the_schema_does_not_ask_for_iso():
    """The model chose the ISO form for "The date at which the rate applies" and dropped a zero."""
    rate = Tool("get_rate", "Get the conversion rate at a specified date", {"type": "object", "properties": {
        "to_currency": {"type": "string"}, "date": {"type": "string", "description": "The date at which the rate applies"}},
        "required": ["to_currency"]})
    g = ground_call(ToolCall("get_rate", {"to_currency": "USD", "date": "2022-01-1"}), [rate],
                    request("the rate from euro to USD at January 1, 2022"))
    assert g.call == ToolCall("get_rate", {"to_currency": "USD", "date": "2022-01-01"})


FLIGHT = Tool("check_flight_status", "Check the status of a flight", {"type": "object", "properties": {
    "flight_number": {"type": "string"}, "date": {"type": "string", "description": "Date of the flight (YYYY-MM-DD)"}},
    "required": ["flight_number"]})


@pytest.mark.parametrize("text, written, read", [
    ("flight BA117, where the date of the flight is January 2nd, 2027", "2027-01-20", "2027-01-02"),   # day misread
    ("check flight BA117, date of the flight = january 2, 2026", "2026-09-01", "2026-01-02"),         # month and day
    ("status of BA117 on 14 March 2026", "March 14, 2026", "2026-03-14"),                              # not ISO
    ("status of BA117 on 14th of March, 2026", "BA117", "2026-03-14"),                                 # no date at all
    ("status of BA117 on 2026-03-14", "2026-03-14", "2026-03-14"),                                     # right already
    ("status of BA117 on 2026-03-14", "2026-07-30", "2026-07-30"),                                     # points at none
    ("status of BA117 on 2026-03-14 or March 3, 2026", "2026-03-30", "2026-03-30"),                    # at two: kept
    ("status of BA117 tomorrow", "2026-03-30", None),                        # no date said: unstated, dropped
])
def test_an_iso_date_is_read_from_the_date_the_request_states(text, written, read):
    g = ground_call(ToolCall("check_flight_status", {"flight_number": "BA117", "date": written}), [FLIGHT], request(text))
    assert g.call is not None and g.call.arguments.get("date") == read


RETURN = Tool("return_item", "Start a return for an order", {"type": "object", "properties": {
    "order_id": {"type": "string"}, "reason": {"type": "string", "enum": ["damaged", "too large", "no longer needed"]},
    "units": {"type": "string", "enum": ["metric", "imperial"]}}, "required": ["order_id", "reason"]})


@pytest.mark.parametrize("text, written, read", [
    ("I need to return item in too large reason, with order number A78513", "damaged", "too large"),
    ("return A78513, it arrived damaged", "damaged", "damaged"),                      # said: kept
    ("return A78513", "damaged", "damaged"),                                          # none said: the model's
    ("return A78513, too large or no longer needed", "damaged", "damaged"),           # two said: kept
])
def test_an_enum_member_the_request_does_not_say_gives_way_to_the_one_it_says(text, written, read):
    g = ground_call(ToolCall("return_item", {"order_id": "A78513", "reason": written}), [RETURN], request(text))
    assert g.call.arguments["reason"] == read


def test_a_list_in_a_comma_separated_string_is_joined_the_schemas_way():
    quotes = Tool("quotes", "Stock quotes", {"type": "object", "properties": {
        "symbols": {"type": "string", "description": "Comma-separated ticker symbols"}}, "required": ["symbols"]})
    for written in ("KO & BAC", "KO and BAC", "KO, BAC", "KO,BAC"):
        g = ground_call(ToolCall("quotes", {"symbols": written}), [quotes], request("quotes for KO & BAC"))
        assert g.call == ToolCall("quotes", {"symbols": "KO,BAC"})
    plain = ground_call(ToolCall("send", {"message": "salt and pepper"}), [Tool("send", "Send", {"type": "object", "properties": {
        "message": {"type": "string"}}, "required": ["message"]})], request("send salt and pepper"))
    assert plain.call.arguments["message"] == "salt and pepper"          # only where the schema asks for a list


@pytest.mark.parametrize("description, form", [
    ("Time for the reminder (e.g. 3:00 PM)", (" ", True)), ("like 7:30am", ("", False)),
    ("Start time, h:mm AM/PM", (" ", True)), ("Start time, HH:MM", None), ("Time of day", None),
])
def test_a_12_hour_form_is_read_from_the_description(description, form):
    from toolcore.schema import twelve_hour_form
    assert twelve_hour_form({"type": "string", "description": description}) == form


TAX = Tool("compute_tax", "Compute income tax", {"type": "object", "properties": {
    "income": {"type": "number"}, "country": {"type": "string", "description": "Country of residence"},
    "language": {"type": "string", "description": "Language of the report"},
    "country_code": {"type": "string", "description": "ISO country code"}}, "required": ["income", "country"]})


@pytest.mark.parametrize("text, key, written, read", [
    ("compute income tax owed with the annual income set to 1617 and in Portugal", "country", "Portuguese", "Portugal"),
    ("tax on 1617 for residents of portugal, born in Poland", "country", "Porto", "Portugal"),
    ("tax for 1617 in Portugal", "country", "Portugal", "Portugal"),                   # said: kept
    ("tax for 1617 in Porto, Portugal", "country", "Porto", "Porto"),                   # said (a city): kept
    ("tax for 1617, Portugal or Portland", "country", "Portuguese", "Portuguese"),      # two words open so: kept
    ("tax for 1617 in Portugal", "language", "Portuguese", "Portuguese"),               # not a country parameter
    ("tax for 1617 in Portugal", "country_code", "Portuguese", "Portuguese"),           # a code: not read
])
def test_a_country_the_request_names_replaces_a_word_it_does_not_say(text, key, written, read):
    place = Tool("weather", "Weather", {"type": "object", "properties": {"location": {
        "type": "string", "description": "City and country, e.g. Ghent, Belgium"}}, "required": ["location"]})
    g = ground_call(ToolCall("weather", {"location": "Porto, Portugal"}), [place], request("weather in Portimao please"))
    assert g.call is not None and g.call.arguments["location"] != "Portimao"      # a qualified place: not read
    g = ground_call(ToolCall("compute_tax", {"income": 1617, "country": "Portugal", key: written}), [TAX], request(text))
    assert g.call is not None and g.call.arguments[key] == read


CALC = Tool("calculate", "Evaluate an arithmetic expression", {"type": "object", "properties": {"expression": {
    "type": "string", "description": "Arithmetic expression, e.g. 15 * 23 + 47 or sqrt(144) + 2**3"}},
    "required": ["expression"]})


@pytest.mark.parametrize("text, written, read", [
    ("what is 12*669*639", "12*669*639", "12 * 669 * 639"),
    ("quickly calculate sqrt(36)*30", "sqrt(36)*30", "sqrt(36) * 30"),
    ("work out 15 x 23", "15 x 23", "15 * 23"),
    ("how much is twenty-four divided by six", "twenty-four / six", "24 / 6"),
    ("what is 7 cubed", "7 ** 3", "7**3"),                        # a power as the example writes it
    ("work out -4+(2*3)", "-4+(2*3)", "-4 + (2 * 3)"),             # a sign stays on its number
    ("12 * 669 * 639 please", "12 * 669 * 639", "12 * 669 * 639"),
    ("the square root of 81 times 6", "the square root of 81 * 6", "the square root of 81 * 6"),   # words: left
])
def test_an_arithmetic_expression_is_spaced_as_the_schemas_example(text, written, read):
    g = ground_call(ToolCall("calculate", {"expression": written}), [CALC], request(text))
    assert g.call is not None and g.call.arguments["expression"] == read


@pytest.mark.parametrize("description, form", [
    ("Arithmetic expression, e.g. 15 * 23 + 47 or sqrt(144) + 2**3", "**"),
    ("Math expression such as (2 + 3) ** 2", " ** "),
    ("Math expression such as 2+3", None),                  # an unspaced example: the model's spacing stays
    ("A note, e.g. 2 - 3 apples", None),                    # not an expression
])
def test_the_arithmetic_form_is_read_from_the_description(description, form):
    from toolcore.schema import spaced_arithmetic_form
    assert spaced_arithmetic_form({"type": "string", "description": description}) == form


def test_integers_a_schema_declares_floats_are_written_as_floats():
    """OpenAPI's `format: float` (BFCL's `float`, toolcore.bfcl): BFCL's checker refuses [1, 3] for a list
    of floats. A plain `number` keeps its integers."""
    from toolcore.schema import declared_floats

    area = Tool("area_under_curve", "Area under a curve", {"type": "object", "properties": {
        "interval": {"type": "array", "items": {"type": "number", "format": "float"}},
        "steps": {"type": "integer"}, "scale": {"type": "number"}, "rate": {"type": "number", "format": "double"}},
        "required": ["interval"]})
    g = ground_call(ToolCall("area_under_curve", {"interval": [1, 3], "steps": 4, "scale": 2, "rate": 5}), [area],
                    said("the area under the curve from 1 to 3 in 4 steps, scale 2 at rate 5"))
    args = g.call.arguments
    assert repr(args) == repr({"interval": [1.0, 3.0], "steps": 4, "scale": 2, "rate": 5.0})
    assert declared_floats(True, {"type": "number", "format": "float"}) is True
    nested = {"type": "object", "properties": {"a": {"items": {"type": "number", "format": "float"}}}}
    assert declared_floats({"a": [1]}, nested) == {"a": [1.0]}
