"""Tests for the rule-based symbolic pre-parser (runtime.baselines.symbolic).

Every phrasing here was written for these tests; none comes from an evaluation suite.
"""

from __future__ import annotations

import inspect
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.baselines import symbolic
from runtime.baselines.symbolic import (
    SymbolicParser,
    digitize,
    find_clocks,
    format_clock_12h,
    parse_duration_minutes,
    words_to_number,
)
from toolcore.registry import load_registry
from toolcore.schema import Tool, ToolCall

# ------------------------------------------------------------------------------------------------
# Tools: the project's built-in registry (crop needs an image and has no text rules)
# ------------------------------------------------------------------------------------------------

REGISTRY = load_registry()
SCHEMAS = [n for n in REGISTRY.names if n != "crop"]
_STR = {"type": "string"}
def make_tool(name: str) -> Tool:
    return REGISTRY[name]


def offer(*names: str) -> list[Tool]:
    return [make_tool(n) for n in (names or SCHEMAS)]


ALL = offer()
parse = SymbolicParser()


def calls(*pairs: tuple[str, dict]) -> list[ToolCall]:
    return [ToolCall(name, args) for name, args in pairs]


def check(text: str, expected: list[tuple[str, dict]], tools: list[Tool] | None = None) -> None:
    got = parse(text, ALL if tools is None else tools)
    # compared as JSON so that types count (Python says 5 == 5.0 and 1 == True)
    assert json.dumps([c.to_dict() for c in got]) == json.dumps([c.to_dict() for c in calls(*expected)]), text


# ------------------------------------------------------------------------------------------------
# Single intents, every tool, all tools offered
# ------------------------------------------------------------------------------------------------

W, A, T, M = "get_weather", "set_alarm", "set_timer", "send_message"
R, C, P, TIME = "create_reminder", "search_contacts", "play_music", "get_time"
CALC, WEB, PL, PR = "calculate", "web_search", "pan_left", "pan_right"

SINGLE = [
    # weather
    ("What's the weather like in Paris today?", [(W, {"location": "Paris"})]),
    ("weather forecast for New York City this weekend", [(W, {"location": "New York City"})]),
    ("How hot is it in Dubai right now", [(W, {"location": "Dubai"})]),
    ("Is it raining in London?", [(W, {"location": "London"})]),
    ("what's the weather in paris", [(W, {"location": "paris"})]),
    ("Tokyo weather", [(W, {"location": "Tokyo"})]),
    ("What's London's forecast", [(W, {"location": "London"})]),
    ("Check the weather for tomorrow in Berlin", [(W, {"location": "Berlin"})]),
    ("how cold is it going to be in Chicago tonight", [(W, {"location": "Chicago"})]),
    ("what's the weather like in Rio de Janeiro right now?", [(W, {"location": "Rio de Janeiro"})]),
    ("weather in Washington D.C.", [(W, {"location": "Washington D.C."})]),
    ("What's the weather in San Francisco, CA?", [(W, {"location": "San Francisco, CA"})]),
    ("In Paris, what's the temperature?", [(W, {"location": "Paris"})]),
    ("Do I need an umbrella in Seattle today?", [(W, {"location": "Seattle"})]),
    ("i wonder if it's going to rain in Amsterdam tomorrow", [(W, {"location": "Amsterdam"})]),
    ("Weather for Mexico City please", [(W, {"location": "Mexico City"})]),
    ("is it raining", [(W, {})]),
    # alarms
    ("Set an alarm for 7am", [(A, {"hour": 7, "minute": 0})]),
    ("set an alarm for 7", [(A, {"hour": 7, "minute": 0})]),
    ("wake me up at 7:30 a.m.", [(A, {"hour": 7, "minute": 30})]),
    ("Set an alarm for 7 AM", [(A, {"hour": 7, "minute": 0})]),
    ("Set an alarm for seven thirty", [(A, {"hour": 7, "minute": 30})]),
    ("alarm for half past six", [(A, {"hour": 6, "minute": 30})]),
    ("wake me up at quarter to eight", [(A, {"hour": 7, "minute": 45})]),
    ("set an alarm for noon", [(A, {"hour": 12, "minute": 0})]),
    ("set an alarm for midnight", [(A, {"hour": 0, "minute": 0})]),
    ("wake me up at 6 in the morning", [(A, {"hour": 6, "minute": 0})]),
    ("set an alarm for 9 at night", [(A, {"hour": 21, "minute": 0})]),
    ("set an alarm for 5 PM", [(A, {"hour": 17, "minute": 0})]),
    ("alarm at 12 pm", [(A, {"hour": 12, "minute": 0})]),
    ("set an alarm for 12 AM", [(A, {"hour": 0, "minute": 0})]),
    ("set an alarm for 7:05 p.m.", [(A, {"hour": 19, "minute": 5})]),
    ("wake me up at seven oh five", [(A, {"hour": 7, "minute": 5})]),
    ("get me up at six forty-five", [(A, {"hour": 6, "minute": 45})]),
    ("set an alarm for 14:30", [(A, {"hour": 14, "minute": 30})]),
    ("wake me up tomorrow morning at 8", [(A, {"hour": 8, "minute": 0})]),
    ("set an alarm tonight at 11", [(A, {"hour": 23, "minute": 0})]),
    ("set an alarm for quarter past 10 tonight", [(A, {"hour": 22, "minute": 15})]),
    ("wake me up at 20 to 7", [(A, {"hour": 6, "minute": 40})]),
    ("set an alarm for 7 o'clock", [(A, {"hour": 7, "minute": 0})]),
    ("set alarms for 6, 6:30 and 7", [(A, {"hour": 6, "minute": 0}), (A, {"hour": 6, "minute": 30}),
                                      (A, {"hour": 7, "minute": 0})]),
    # timers
    ("Set a timer for 5 minutes", [(T, {"minutes": 5})]),
    ("start a 15 minute timer", [(T, {"minutes": 15})]),
    ("set a timer for fifteen minutes", [(T, {"minutes": 15})]),
    ("timer for half an hour", [(T, {"minutes": 30})]),
    ("set a timer for an hour", [(T, {"minutes": 60})]),
    ("set a timer for an hour and a half", [(T, {"minutes": 90})]),
    ("set a timer for 2 hours", [(T, {"minutes": 120})]),
    ("Set a timer for 1 hour and 30 minutes", [(T, {"minutes": 90})]),
    ("set a timer for two and a half hours", [(T, {"minutes": 150})]),
    ("set a countdown for 45 mins", [(T, {"minutes": 45})]),
    ("Please set a 45-minute timer", [(T, {"minutes": 45})]),
    ("set a quarter hour timer", [(T, {"minutes": 15})]),
    # messages
    ("Text Mom saying I'll be late", [(M, {"recipient": "Mom", "message": "I'll be late"})]),
    ('send a message to John saying "Meet me at 5!"', [(M, {"recipient": "John", "message": "Meet me at 5!"})]),
    ("tell Sarah that the meeting is moved to Friday.",
     [(M, {"recipient": "Sarah", "message": "the meeting is moved to Friday"})]),
    ("let Bob know I'm on my way", [(M, {"recipient": "Bob", "message": "I'm on my way"})]),
    ("message Alice: dinner at 8?", [(M, {"recipient": "Alice", "message": "dinner at 8"})]),
    ("Text john i'm running late", [(M, {"recipient": "john", "message": "i'm running late"})]),
    ("Send a text to my mom saying happy birthday!", [(M, {"recipient": "mom", "message": "happy birthday"})]),
    ("Send Dad a message saying call me back.", [(M, {"recipient": "Dad", "message": "call me back"})]),
    ("send a message saying see you soon to Lisa", [(M, {"recipient": "Lisa", "message": "see you soon"})]),
    ("shoot Kevin a text saying running 10 min late",
     [(M, {"recipient": "Kevin", "message": "running 10 min late"})]),
    ("DM Carlos: the build is green", [(M, {"recipient": "Carlos", "message": "the build is green"})]),
    ('text Mom "Don\'t forget the cake!"', [(M, {"recipient": "Mom", "message": "Don't forget the cake!"})]),
    ("Let Sophie know that I'll call her tonight.",
     [(M, {"recipient": "Sophie", "message": "I'll call her tonight"})]),
    ("tell my sister Sarah I'll pick her up at 6",
     [(M, {"recipient": "Sarah", "message": "I'll pick her up at 6"})]),
    ("text Tom saying please call me", [(M, {"recipient": "Tom", "message": "call me"})]),
    ("text Mike saying I'll be there soon, sorry",
     [(M, {"recipient": "Mike", "message": "I'll be there soon, sorry"})]),
    ("write a message to Professor Lee saying I'll submit tomorrow",
     [(M, {"recipient": "Professor Lee", "message": "I'll submit tomorrow"})]),
    # reminders
    ("Remind me to call the dentist at 3pm", [(R, {"title": "call the dentist", "time": "3:00 PM"})]),
    ("remind me about the meeting at 3:30 p.m.", [(R, {"title": "meeting", "time": "3:30 PM"})]),
    ("set a reminder to take my pills at noon", [(R, {"title": "take my pills", "time": "12:00 PM"})]),
    ("don't let me forget to buy milk at 5 pm", [(R, {"title": "buy milk", "time": "5:00 PM"})]),
    ("remind me at 5pm to feed the cat", [(R, {"title": "feed the cat", "time": "5:00 PM"})]),
    ("Remind me to water the plants tomorrow at 9 am", [(R, {"title": "water the plants", "time": "9:00 AM"})]),
    ("create a reminder for the team standup at 10:30am", [(R, {"title": "team standup", "time": "10:30 AM"})]),
    ("remind me to buy eggs, milk and bread at 6pm",
     [(R, {"title": "buy eggs, milk and bread", "time": "6:00 PM"})]),
    ("Remind me to call Dad at 6 this evening", [(R, {"title": "call Dad", "time": "6:00 PM"})]),
    ("remind me to take out the trash at 8 pm", [(R, {"title": "take out the trash", "time": "8:00 PM"})]),
    ("remind me to stretch", [(R, {"title": "stretch"})]),
    # contacts
    ("find Jessica in my contacts", [(C, {"query": "Jessica"})]),
    ("look up Sarah", [(C, {"query": "Sarah"})]),
    ("search my contacts for David", [(C, {"query": "David"})]),
    ("what's Emily's number", [(C, {"query": "Emily"})]),
    ("look up Mark Johnson in my contacts", [(C, {"query": "Mark Johnson"})]),
    ("Find Dr. Smith in my contacts", [(C, {"query": "Dr. Smith"})]),
    ("Do I have Kevin in my contacts?", [(C, {"query": "Kevin"})]),
    ("pull up Ryan's contact info", [(C, {"query": "Ryan"})]),
    # music
    ("play some jazz music", [(P, {"song": "jazz"})]),
    ("play Bohemian Rhapsody by Queen", [(P, {"song": "Bohemian Rhapsody"})]),
    ("put on lo-fi beats", [(P, {"song": "lo-fi beats"})]),
    ("listen to Taylor Swift", [(P, {"song": "Taylor Swift"})]),
    ("play rock and roll", [(P, {"song": "rock and roll"})]),
    ("play Stand by Me", [(P, {"song": "Stand by Me"})]),
    ("play something by Adele", [(P, {"song": "Adele"})]),
    ("play the song Yesterday", [(P, {"song": "Yesterday"})]),
    ("Play The Beatles", [(P, {"song": "The Beatles"})]),
    ("I want to listen to some classical music", [(P, {"song": "classical"})]),
    ("put on Despacito please", [(P, {"song": "Despacito"})]),
    ("play Earth, Wind and Fire", [(P, {"song": "Earth, Wind and Fire"})]),
    ("queue up Hotel California by the Eagles", [(P, {"song": "Hotel California"})]),
    ("play Thriller by Michael Jackson on Spotify", [(P, {"song": "Thriller"})]),
    ("play me something relaxing", [(P, {"song": "relaxing"})]),
    ("Play Purple Rain", [(P, {"song": "Purple Rain"})]),
    # camera
    ("look to the left", [(PL, {})]),
    ("pan right", [(PR, {})]),
    ("turn the camera left by 45 degrees", [(PL, {"degrees": 45})]),
    ("rotate the camera to the right by ninety degrees", [(PR, {"degrees": 90})]),
    ("turn left by 15°", [(PL, {"degrees": 15})]),
    ("look to your right", [(PR, {})]),
    ("pan to the left by 60 degrees", [(PL, {"degrees": 60})]),
    # time
    ("what time is it", [(TIME, {})]),
    ("what's the time", [(TIME, {})]),
    ("tell me the time", [(TIME, {})]),
    ("what time is it in Tokyo?", [(TIME, {})]),
    ("do you know what time it is", [(TIME, {})]),
    # arithmetic
    ("calculate 15 times 23 plus 47", [(CALC, {"expression": "15 * 23 + 47"})]),
    ("what is 15 times 23 plus 47", [(CALC, {"expression": "15 * 23 + 47"})]),
    ("what's 12% of 80", [(CALC, {"expression": "12 / 100 * 80"})]),
    ("what's the square root of 144", [(CALC, {"expression": "sqrt(144)"})]),
    ("what's 5 squared", [(CALC, {"expression": "5**2"})]),
    ("what's 2 to the power of 10", [(CALC, {"expression": "2 ** 10"})]),
    ("what's 100 divided by 4", [(CALC, {"expression": "100 / 4"})]),
    ("what's 9 over 3", [(CALC, {"expression": "9 / 3"})]),
    ("calculate (3 + 4) * 2", [(CALC, {"expression": "(3 + 4) * 2"})]),
    ("what is 7 x 8", [(CALC, {"expression": "7 * 8"})]),
    ("how much is 20 percent of 150", [(CALC, {"expression": "20 / 100 * 150"})]),
    ("compute the square root of 81 plus 4", [(CALC, {"expression": "sqrt(81) + 4"})]),
    ("add 5 and 7", [(CALC, {"expression": "5 + 7"})]),
    ("subtract 15 from 40", [(CALC, {"expression": "40 - 15"})]),
    ("what's forty two plus eight", [(CALC, {"expression": "42 + 8"})]),
    ("what's 50 minus 18 plus 3", [(CALC, {"expression": "50 - 18 + 3"})]),
    ("compute 3.5 times 2", [(CALC, {"expression": "3.5 * 2"})]),
    # web search
    ("search the web for best pizza in town", [(WEB, {"query": "best pizza in town"})]),
    ("look up quantum computing online", [(WEB, {"query": "quantum computing"})]),
    ("google how to make sourdough bread", [(WEB, {"query": "how to make sourdough bread"})]),
    ("search google for Python tutorials", [(WEB, {"query": "Python tutorials"})]),
    ("search for cheap flights to Rome online", [(WEB, {"query": "cheap flights to Rome"})]),
    ("search online for vegan recipes", [(WEB, {"query": "vegan recipes"})]),
    ("do a web search for climate change news and show me the top 3 results",
     [(WEB, {"query": "climate change news", "num_results": 3})]),
    ("can you search the internet for flights to Tokyo and give me 5 results",
     [(WEB, {"query": "flights to Tokyo", "num_results": 5})]),
    ("search for electric cars on the web, top 10 results", [(WEB, {"query": "electric cars", "num_results": 10})]),
    ("find information about black holes", [(WEB, {"query": "black holes"})]),
    ('Search the web for "machine learning basics"', [(WEB, {"query": "machine learning basics"})]),
    ("web search: best coffee shops in Seattle", [(WEB, {"query": "best coffee shops in Seattle"})]),
    # assorted phrasings
    ("I need to wake up at 5:45 tomorrow", [(A, {"hour": 5, "minute": 45})]),
    ("SET AN ALARM FOR 7AM", [(A, {"hour": 7, "minute": 0})]),
    ("Forecast Berlin", [(W, {"location": "Berlin"})]),
    ("weather in St. Louis", [(W, {"location": "St. Louis"})]),
    ("what's it like outside in Vancouver today", [(W, {"location": "Vancouver"})]),
    ('Send Olivia the message "Call me when you land"',
     [(M, {"recipient": "Olivia", "message": "Call me when you land"})]),
    ('Please send Noah a text that reads "I\'m outside"', [(M, {"recipient": "Noah", "message": "I'm outside"})]),
    ("Tell my boss I'm running late", [(M, {"recipient": "boss", "message": "I'm running late"})]),
    ("Let the team know the release is delayed", [(M, {"recipient": "team", "message": "the release is delayed"})]),
    ("don't forget to remind me to lock the door at 10 tonight",
     [(R, {"title": "lock the door", "time": "10:00 PM"})]),
    ("Could you remind me to email Dave at ten?", [(R, {"title": "email Dave", "time": "10:00 AM"})]),
    ("remind me to check the oven in 20 minutes", [(R, {"title": "check the oven"})]),
    ("get me Amelia's email", [(C, {"query": "Amelia"})]),
    ("Find the number for Isabella", [(C, {"query": "Isabella"})]),
    ('Play "Let It Be"', [(P, {"song": "Let It Be"})]),
    ("throw on some Drake", [(P, {"song": "Drake"})]),
    ("Would you mind reminding me to call the bank at 2:30?", [(R, {"title": "call the bank", "time": "2:30 PM"})]),
    ("Remind me tomorrow at 8am to send the invoice", [(R, {"title": "send the invoice", "time": "8:00 AM"})]),
    ("I have to remember to renew my passport at 1pm, remind me",
     [(R, {"title": "renew my passport", "time": "1:00 PM"})]),
    ("Send an SMS to Dr. Kim saying my appointment needs to move",
     [(M, {"recipient": "Dr. Kim", "message": "my appointment needs to move"})]),
    ("camera left 20 degrees", [(PL, {"degrees": 20})]),
    ("find me some articles on the stock market online", [(WEB, {"query": "the stock market"})]),
    ("what's 1,250 plus 3,750", [(CALC, {"expression": "1250 + 3750"})]),
    ("what's 18% of 45.50", [(CALC, {"expression": "18 / 100 * 45.50"})]),
    ("play a song by Bruno Mars", [(P, {"song": "Bruno Mars"})]),
    ("my alarm should go off at 6:10", [(A, {"hour": 6, "minute": 10})]),
    ("Time please", [(TIME, {})]),
    ("What hour is it?", [(TIME, {})]),
]


@pytest.mark.parametrize("text,expected", SINGLE, ids=[t for t, _ in SINGLE])
def test_single_intent(text, expected):
    check(text, expected)


# ------------------------------------------------------------------------------------------------
# Several intents in one utterance, in the order asked, and pronoun coreference
# ------------------------------------------------------------------------------------------------

MULTI = [
    ("find Tom in my contacts and send him a message saying hi",
     [(C, {"query": "Tom"}), (M, {"recipient": "Tom", "message": "hi"})]),
    ("Look up Maria's number and text her that dinner is ready",
     [(C, {"query": "Maria"}), (M, {"recipient": "Maria", "message": "dinner is ready"})]),
    ('find Lucy in my contacts, then text her "running late, sorry!"',
     [(C, {"query": "Lucy"}), (M, {"recipient": "Lucy", "message": "running late, sorry!"})]),
    ("search my contacts for Paul and send him a text that says see you tomorrow",
     [(C, {"query": "Paul"}), (M, {"recipient": "Paul", "message": "see you tomorrow"})]),
    ("Look up Jenny and tell her the party starts at 8",
     [(C, {"query": "Jenny"}), (M, {"recipient": "Jenny", "message": "the party starts at 8"})]),
    ("Message Grace and tell her the keys are under the mat",
     [(M, {"recipient": "Grace", "message": "the keys are under the mat"})]),
    ("What's the weather in Boston and set an alarm for 6:30 am",
     [(W, {"location": "Boston"}), (A, {"hour": 6, "minute": 30})]),
    ("Set a timer for 10 minutes, then play some jazz, and tell me the weather in Rome",
     [(T, {"minutes": 10}), (P, {"song": "jazz"}), (W, {"location": "Rome"})]),
    ("wake me up at 7 and remind me to call mom at 9am",
     [(A, {"hour": 7, "minute": 0}), (R, {"title": "call mom", "time": "9:00 AM"})]),
    ("Check the weather in Tokyo. Also, what time is it?", [(W, {"location": "Tokyo"}), (TIME, {})]),
    ("text Mike saying I'll be there soon and then set a timer for 20 minutes",
     [(M, {"recipient": "Mike", "message": "I'll be there soon"}), (T, {"minutes": 20})]),
    ("Could you please play Hey Jude and turn the camera left by 20 degrees",
     [(P, {"song": "Hey Jude"}), (PL, {"degrees": 20})]),
    ("what's 15 plus 27 and what's 8 times 9",
     [(CALC, {"expression": "15 + 27"}), (CALC, {"expression": "8 * 9"})]),
    ("pan left then pan right 90 degrees", [(PL, {}), (PR, {"degrees": 90})]),
    ("What's the weather in Paris and London", [(W, {"location": "Paris"}), (W, {"location": "London"})]),
    ("play Simon and Garfunkel then set a timer for 3 minutes",
     [(P, {"song": "Simon and Garfunkel"}), (T, {"minutes": 3})]),
    ("tell Anna I said hello, and play some Beyonce",
     [(M, {"recipient": "Anna", "message": "I said hello"}), (P, {"song": "Beyonce"})]),
    ("wake me up at 7, play my morning playlist and tell me the forecast for Denver",
     [(A, {"hour": 7, "minute": 0}), (P, {"song": "morning playlist"}), (W, {"location": "Denver"})]),
    ("Set an alarm for 6 am and a timer for 25 minutes", [(A, {"hour": 6, "minute": 0}), (T, {"minutes": 25})]),
    ("What's 6 times 7? And what time is it?", [(CALC, {"expression": "6 * 7"}), (TIME, {})]),
    ("Turn the camera left, then right by 30 degrees", [(PL, {}), (PR, {"degrees": 30})]),
    ("Find Mia in contacts. Text her: Happy anniversary!",
     [(C, {"query": "Mia"}), (M, {"recipient": "Mia", "message": "Happy anniversary"})]),
    ("Set alarm for 5:30 am. Remind me to jog at 6 am.",
     [(A, {"hour": 5, "minute": 30}), (R, {"title": "jog", "time": "6:00 AM"})]),
    ("what is 3 times 4 plus 5, and what's 2 squared?",
     [(CALC, {"expression": "3 * 4 + 5"}), (CALC, {"expression": "2**2"})]),
    ("Can you text Dad that I'll pick up pizza and then remind me to call the vet at 4pm",
     [(M, {"recipient": "Dad", "message": "I'll pick up pizza"}), (R, {"title": "call the vet", "time": "4:00 PM"})]),
    ("what's the weather in Paris? and play Paris by the Chainsmokers",
     [(W, {"location": "Paris"}), (P, {"song": "Paris"})]),
    # a request no rule covers ends the previous intent instead of leaking into its value
    ("play some jazz and set the volume to 5", [(P, {"song": "jazz"})]),
    ("remind me to pick up the kids and buy groceries at 4:30 pm",
     [(R, {"title": "pick up the kids and buy groceries", "time": "4:30 PM"})]),
    # a keyword inside another intent's value does not start a new intent
    ("remind me to check the weather at 7am", [(R, {"title": "check the weather", "time": "7:00 AM"})]),
    ("text Jane that the timer went off", [(M, {"recipient": "Jane", "message": "the timer went off"})]),
    ("text Tom that it's raining here", [(M, {"recipient": "Tom", "message": "it's raining here"})]),
]


@pytest.mark.parametrize("text,expected", MULTI, ids=[t for t, _ in MULTI])
def test_multi_intent_and_coreference(text, expected):
    check(text, expected)


# ------------------------------------------------------------------------------------------------
# Offered subsets: distractors are ignored, tools not offered are never called
# ------------------------------------------------------------------------------------------------

SUBSETS = [
    ("What's the weather like in Paris today?", [W, T, P], [(W, {"location": "Paris"})]),
    ("Set a timer for 5 minutes", [A, T, R, CALC], [(T, {"minutes": 5})]),
    ("wake me up at 6:30", [A, T, R, TIME], [(A, {"hour": 6, "minute": 30})]),
    ("Remind me to call the dentist at 3pm", [A, R, M], [(R, {"title": "call the dentist", "time": "3:00 PM"})]),
    ("play some jazz music", [P, WEB, C], [(P, {"song": "jazz"})]),
    ("look up Sarah", [C, WEB], [(C, {"query": "Sarah"})]),
    ("look up the history of jazz", [C, WEB], [(WEB, {"query": "the history of jazz"})]),
    ("what's 12% of 80", [CALC, WEB, TIME], [(CALC, {"expression": "12 / 100 * 80"})]),
    # not offered: no call, whatever the request
    ("What's the weather like in Paris today?", [A, T], []),
    ("Set a timer for 5 minutes", [A], []),
    ("what time is it", [W, CALC], []),
    ("turn the camera left by 45 degrees", [PR], []),
    # only the offered half of a two-intent request
    ("What's the weather in Boston and set an alarm for 6:30 am", [A], [(A, {"hour": 6, "minute": 30})]),
    ("Set a timer for 10 minutes, then play some jazz", [P, W], [(P, {"song": "jazz"})]),
    # the contact step is not offered, but "him" still resolves to the person named there
    ("find Tom in my contacts and send him a message saying hi", [M],
     [(M, {"recipient": "Tom", "message": "hi"})]),
]


@pytest.mark.parametrize("text,names,expected", SUBSETS, ids=[f"{t} {n}" for t, n, _ in SUBSETS])
def test_offered_subset(text, names, expected):
    check(text, expected, offer(*names))


def test_unknown_offered_tool_gets_no_call():
    book = Tool.from_schema({"name": "book_flight", "description": "Book a flight",
                             "parameters": {"type": "object", "properties": {"destination": _STR}}})
    assert parse("book a flight to Paris", [book]) == []
    assert parse("book a flight to Paris and set a timer for 5 minutes", [book, make_tool(T)]) == \
        calls((T, {"minutes": 5}))


def test_offered_tool_with_renamed_single_parameter():
    weather = Tool.from_schema({"name": "get_weather", "description": "Weather",
                                "parameters": {"type": "object", "properties": {"city": _STR}}})
    assert parse("weather in Oslo", [weather]) == calls((W, {"city": "Oslo"}))


CHIT_CHAT = [
    "what's the capital of France", "how are you doing today?", "tell me a joke", "thanks, that's all",
    "Hi there!", "Tell me about yourself", "what can you do?", "good morning", "thank you so much!",
    "I love playing guitar", "play the piano", "book a flight to Paris", "order a pizza", "call mom",
    "turn on the lights", "what's on my calendar today", "translate hello into Spanish",
    "how tall is Mount Everest", "what is love", "Hey! What's up?", "turn right now", "it's been a long day",
    "who won the game last night",
    "",
]


@pytest.mark.parametrize("text", CHIT_CHAT)
def test_chit_chat_gives_no_calls(text):
    assert parse(text, ALL) == []


# ------------------------------------------------------------------------------------------------
# Helpers
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,value", [
    ("five", 5), ("fifteen", 15), ("twenty-five", 25), ("forty two", 42), ("one hundred and five", 105),
    ("a hundred", 100), ("two thousand twenty four", 2024), ("12", 12), ("zero", 0),
    ("seven thirty", None), ("hello", None), ("", None),
])
def test_words_to_number(text, value):
    assert words_to_number(text) == value


def test_digitize_keeps_clock_words_apart():
    assert digitize("Set an alarm for Seven Thirty") == "set an alarm for 7 30"


@pytest.mark.parametrize("text,minutes", [
    ("5 minutes", 5), ("half an hour", 30), ("an hour", 60), ("an hour and a half", 90), ("2 hours", 120),
    ("1 hour 15 minutes", 75), ("90 seconds", 2), ("no duration here", None),
])
def test_parse_duration_minutes(text, minutes):
    assert parse_duration_minutes(digitize(text)) == minutes


@pytest.mark.parametrize("text,hm", [
    ("at 7", (7, 0)), ("7pm", (19, 0)), ("7:30 a.m.", (7, 30)), ("half past 6", (6, 30)), ("quarter to 8", (7, 45)),
    ("noon", (12, 0)), ("midnight", (0, 0)), ("at 9 at night", (21, 0)), ("at 12 am", (0, 0)), ("12 pm", (12, 0)),
])
def test_find_clocks(text, hm):
    (clock,) = find_clocks(digitize(text))
    assert (clock.hour, clock.minute) == hm


def test_bare_numbers_are_not_times():
    assert find_clocks(digitize("I have 3 kids and 2 dogs")) == []
    assert find_clocks(digitize("for 5 minutes")) == []


@pytest.mark.parametrize("hour,minute,explicit,text", [
    (15, 0, True, "3:00 PM"), (0, 5, True, "12:05 AM"), (12, 0, True, "12:00 PM"), (9, 30, True, "9:30 AM"),
    (3, 0, False, "3:00 PM"), (9, 0, False, "9:00 AM"),
])
def test_format_clock_12h(hour, minute, explicit, text):
    assert format_clock_12h(hour, minute, explicit) == text


def test_no_eval_or_exec():
    source = inspect.getsource(symbolic)
    assert not re.search(r"(?<![\w.])(?:eval|exec)\s*\(", source)


# ------------------------------------------------------------------------------------------------
# Property: any text gives only offered tools, with arguments of the declared types
# ------------------------------------------------------------------------------------------------

_WORDS = ["weather", "in", "Paris", "and", "then", "alarm", "at", "7", "seven", "thirty", "pm", "timer",
          "for", "minutes", "text", "Tom", "saying", "hi", "remind", "me", "to", "play", "jazz", "by",
          "look", "left", "right", "degrees", "what", "time", "is", "it", "calculate", "plus", "times",
          "search", "the", "web", "him", "contacts", "find", ",", ".", "?", "'", '"', "half", "past",
          "quarter", "noon", "%", "of", "square", "root", "(", ")", "google", "top", "results", "é", ""]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_WORDS), max_size=14), st.sets(st.sampled_from(sorted(SCHEMAS)), min_size=1))
def test_any_text_gives_well_typed_calls_to_offered_tools(words, names):
    tools = offer(*sorted(names))
    by_name = {t.name: t for t in tools}
    for call in parse(" ".join(words), tools):
        assert call.name in by_name
        errors = [e for e in by_name[call.name].validation_errors(call.arguments) if "required" not in e]
        assert errors == [], (words, call)
