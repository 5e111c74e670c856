"""Documented canonical forms: the codes a call writes for what people say, where a schema asks for the
code ("dollars" -> USD, "French" -> fr). data_gen realises a code's value in one of its spoken forms and
its verification accepts them (data_gen/schema_driven), so the data teaches the model to write the code."""

from __future__ import annotations

# ISO 4217 code -> what people say (the code itself is always accepted too)
CURRENCIES: dict[str, list[str]] = {
    "USD": ["dollars", "US dollars", "usd"], "EUR": ["euros", "euro"], "GBP": ["pounds", "British pounds", "sterling"],
    "JPY": ["yen", "Japanese yen"], "CHF": ["Swiss francs"], "CAD": ["Canadian dollars"],
    "AUD": ["Australian dollars"], "CNY": ["yuan", "renminbi"], "INR": ["rupees", "Indian rupees"],
    "MXN": ["pesos", "Mexican pesos"], "BRL": ["reais", "Brazilian reais"], "SEK": ["Swedish kronor"],
    "NOK": ["Norwegian kroner"], "KRW": ["won", "Korean won"], "SGD": ["Singapore dollars"],
    "NZD": ["New Zealand dollars"], "ZAR": ["rand", "South African rand"], "TRY": ["Turkish lira"],
    "PLN": ["zloty", "Polish zloty"], "THB": ["baht", "Thai baht"],
}
# language name -> ISO 639-1 code (a parameter that asks for a code gets the code; the name is said)
LANGUAGES: dict[str, str] = {
    "English": "en", "French": "fr", "German": "de", "Spanish": "es", "Italian": "it", "Portuguese": "pt",
    "Dutch": "nl", "Japanese": "ja", "Chinese": "zh", "Korean": "ko", "Russian": "ru", "Arabic": "ar",
    "Hindi": "hi", "Turkish": "tr", "Polish": "pl", "Swedish": "sv", "Greek": "el", "Vietnamese": "vi",
    "Thai": "th", "Indonesian": "id", "Czech": "cs", "Finnish": "fi", "Hebrew": "he", "Danish": "da",
}

