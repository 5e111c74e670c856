"""Value lists for the schema-driven samplers that the built-in vocabularies (`toolcore/vocab/`:
cities, names, songs, artists, genres, search queries, messages) do not cover. Plain data, one list
a kind; a value is said verbatim, or (for the mappings) in one of the listed spoken forms, which are
the documented canonical forms verification accepts ("dollars" -> USD, "March 14, 2026" -> 2026-03-14).
"""

from __future__ import annotations

# the canonical forms (currency and language codes) live in toolcore: runtime grounding reads them too
from toolcore.canonical import CURRENCIES, LANGUAGES  # noqa: F401  (V.CURRENCIES, V.LANGUAGES)

COUNTRIES = ["France", "Germany", "Japan", "Brazil", "Canada", "Australia", "India", "Mexico", "Italy", "Spain",
             "Kenya", "Egypt", "Norway", "Sweden", "Argentina", "Chile", "Vietnam", "Thailand", "Portugal",
             "Ireland", "New Zealand", "South Korea", "Morocco", "Peru", "Greece", "Turkey", "Poland", "Nigeria",
             "Indonesia", "Colombia", "Finland", "Austria", "Switzerland", "Belgium", "the Netherlands"]
TICKERS = ["AAPL", "MSFT", "GOOGL", "AMZN", "TSLA", "NVDA", "META", "NFLX", "IBM", "ORCL", "INTC", "AMD", "DIS",
           "KO", "PEP", "NKE", "JPM", "BAC", "V", "MA", "WMT", "COST", "SBUX", "UBER", "SHOP", "SAP", "TSM"]
COMPANIES = ["Acme Corp", "Globex", "Initech", "Umbrella Labs", "Stark Industries", "Wayne Enterprises",
             "Northwind Traders", "Contoso", "Fabrikam", "Tailspin Toys", "Blue Yonder Airlines", "Litware",
             "Vandelay Industries", "Hooli", "Pied Piper", "Soylent Co", "Cyberdyne", "Oceanic Airlines"]
TEAMS = ["Lakers", "Celtics", "Warriors", "Bulls", "Yankees", "Red Sox", "Dodgers", "Arsenal", "Chelsea",
         "Liverpool", "Barcelona", "Real Madrid", "Bayern Munich", "Juventus", "Ajax", "Packers", "Patriots",
         "Cowboys", "Maple Leafs", "Canadiens", "All Blacks", "Boca Juniors", "Celtic", "Benfica"]
SPORTS = ["basketball", "football", "soccer", "tennis", "baseball", "hockey", "cricket", "rugby", "golf",
          "volleyball", "cycling", "swimming", "athletics", "badminton", "table tennis", "formula 1"]
TITLES = ["The Silent Harbor", "Midnight Garden", "A Long Way North", "Glass Cities", "The Last Orchard",
          "Paper Moons", "Echoes of Summer", "The Clockmaker's Daughter", "Northern Lights", "River of Stars",
          "The Quiet Engine", "Salt and Stone", "Blue Hour", "The Lantern Keeper", "Winter Circuit",
          "Small Victories", "The Copper Road", "Open Water", "Second Spring", "The Atlas of Rain"]
COLORS = ["red", "blue", "green", "yellow", "white", "black", "purple", "orange", "pink", "teal", "gray",
          "navy", "gold", "silver", "warm white", "cool white"]
ROOMS = ["kitchen", "living room", "bedroom", "bathroom", "office", "garage", "hallway", "dining room",
         "basement", "nursery", "guest room", "patio"]
DEVICES = ["thermostat", "living room lights", "front door lock", "garage door", "smart plug", "robot vacuum",
           "air purifier", "ceiling fan", "dishwasher", "washing machine", "porch light", "sprinkler"]
FOODS = ["chicken", "rice", "broccoli", "salmon", "pasta", "tofu", "spinach", "eggs", "oatmeal", "avocado",
         "lentils", "quinoa", "banana", "almonds", "yogurt", "sweet potato", "mushrooms", "beef", "apple"]
DISHES = ["lasagna", "pad thai", "chicken curry", "beef stew", "mushroom risotto", "caesar salad", "tacos",
          "banana bread", "pancakes", "minestrone", "ramen", "shakshuka", "paella", "falafel"]
CUISINES = ["Italian", "Mexican", "Thai", "Indian", "Japanese", "Greek", "French", "Korean", "Ethiopian",
            "Lebanese", "Vietnamese", "Spanish", "Chinese", "Turkish"]
ELEMENTS = ["hydrogen", "helium", "carbon", "nitrogen", "oxygen", "sodium", "iron", "copper", "silver", "gold",
            "neon", "calcium", "potassium", "zinc", "uranium", "lithium", "magnesium", "sulfur"]
SUBJECTS = ["algebra", "biology", "chemistry", "history", "geography", "physics", "economics", "literature",
            "statistics", "geometry", "art history", "computer science", "psychology", "philosophy"]
AIRPORTS = ["JFK", "LAX", "LHR", "CDG", "NRT", "SFO", "ORD", "DXB", "SIN", "FRA", "AMS", "MAD", "SYD", "YYZ",
            "HND", "BCN", "MUC", "ZRH", "DEN", "SEA", "BOS", "ATL", "IST", "GRU"]
STREETS = ["12 Oak Street", "45 Maple Avenue", "300 Pine Road", "8 Harbor Lane", "221 Baker Street",
           "77 Sunset Boulevard", "19 Elm Court", "1600 Main Street", "5 Mill Road", "42 Lake Drive"]
CATEGORIES = ["electronics", "books", "clothing", "toys", "groceries", "furniture", "sports", "beauty",
              "garden", "office supplies", "pet supplies", "music", "travel", "health", "automotive"]
PRODUCTS = ["wireless headphones", "running shoes", "coffee maker", "standing desk", "yoga mat", "backpack",
            "electric kettle", "phone charger", "desk lamp", "water bottle", "rain jacket", "mechanical keyboard"]
DOMAINS = ["example.com", "mail.com", "acme.org", "inbox.net", "company.io"]
FILES = ["report.pdf", "budget_2025.xlsx", "notes.txt", "photo_001.jpg", "slides.pptx", "data.csv",
         "invoice_42.pdf", "summary.docx", "backup.zip", "readme.md"]
TOPICS = ["climate change", "renewable energy", "machine learning", "space exploration", "ancient Rome",
          "the stock market", "electric cars", "healthy sleep", "urban gardening", "ocean plastics",
          "quantum computing", "the Olympics", "jazz history", "volcanoes", "coral reefs", "cryptography"]
GENERIC = ["standard", "basic", "premium", "alpha", "beta", "north", "south", "default", "daily", "weekly",
           "primary", "secondary", "large", "small", "medium", "express", "classic", "compact", "summary", "full"]
# unit words found in a parameter's name or description -> how a quantity in that unit is said
UNITS: dict[str, list[str]] = {
    "kilometers": ["km", "kilometers"], "kilometres": ["km", "kilometres"], "km": ["km", "kilometers"],
    "miles": ["miles"], "meters": ["meters", "m"], "metres": ["metres", "m"], "centimeters": ["cm", "centimeters"],
    "kilograms": ["kg", "kilograms"], "kg": ["kg", "kilos"], "grams": ["grams", "g"], "pounds": ["pounds", "lbs"],
    "celsius": ["degrees Celsius", "°C", "degrees"], "fahrenheit": ["degrees Fahrenheit", "°F"],
    "minutes": ["minutes", "mins"], "seconds": ["seconds", "secs"], "hours": ["hours", "hrs"], "days": ["days"],
    "years": ["years"], "liters": ["liters", "L"], "litres": ["litres", "L"], "percent": ["percent", "%"],
    "bytes": ["bytes"], "megabytes": ["MB", "megabytes"], "calories": ["calories", "kcal"], "watts": ["watts", "W"],
    "dollars": ["dollars"], "usd": ["dollars", "USD"], "euros": ["euros"],
}
# names of places and things a parameter may ask for by name
VENUES = ["Riverside Gallery", "The Blue Door", "Central Station", "Harbor Point", "Maple Hall", "Sunrise Cafe",
          "Golden Dragon", "Luigi's Trattoria", "City Museum of Art", "Northside Market", "Oak Tree Inn",
          "Summer Sound Festival", "Green Valley Fair", "Lakeside Arena", "Corner Bistro", "Union Square Store"]
PROJECTS = ["Apollo", "website redesign", "Q3 report", "mobile app", "onboarding", "Project Falcon", "data migration"]
ANIMALS = ["red fox", "snow leopard", "bottlenose dolphin", "emperor penguin", "gray wolf", "koala", "honey bee",
           "bald eagle", "giant panda", "sea otter", "monarch butterfly", "komodo dragon"]
SYMPTOMS = ["headache", "sore throat", "fever", "back pain", "cough", "fatigue", "dizziness", "nausea", "rash"]
MEDICATIONS = ["ibuprofen", "paracetamol", "amoxicillin", "vitamin D", "metformin", "loratadine", "aspirin"]
FORMULAS = ["H2O", "CO2", "NaCl", "C6H12O6", "H2SO4", "NH3", "CH4", "CaCO3", "O2", "C2H5OH"]
WORDS = ["serendipity", "ephemeral", "resilient", "meticulous", "candid", "gregarious", "ubiquitous", "quaint",
         "benevolent", "tenacious", "eloquent", "frugal"]
WEB_DOMAINS = ["example.com", "openlibrary.org", "mysite.net", "coffee-club.io", "citynews.org"]
IPS = ["192.168.1.20", "10.0.0.7", "172.16.4.2", "8.8.8.8", "203.0.113.5", "198.51.100.14"]
DNA = ["ATGCGT", "GATTACA", "CCGTAA", "TTAGGC", "ACGTACGT", "GGCATC"]

# what service APIs take (commerce, CRM, logistics, devops, banking)
FIRST_NAMES = ["Priya", "Marcus", "Ingrid", "Tomasz", "Aiko", "Lucia", "Kwame", "Sofia", "Daniel", "Mei", "Omar",
               "Hannah", "Rafael", "Chloe", "Arjun", "Elena", "Jonas", "Fatima", "Liam", "Noor"]
LAST_NAMES = ["Nakamura", "Okafor", "Lindqvist", "Moreau", "Kowalski", "Haddad", "Fernandes", "O'Brien", "Schmidt",
              "Patel", "Rossi", "Nguyen", "Andersen", "Garcia", "Ivanova", "Mensah", "Dubois", "Kim", "Novak", "Reyes"]
POSTAL_CODES = ["94107", "10115", "75008", "SW1A 1AA", "M5V 2T6", "2000", "100-0005", "04109", "EC2A 4NE", "60614",
                "1010", "08001", "D02 X285", "3011 AB", "20121", "V6B 1A1", "110001", "2100", "00-950", "H2X 1Y4"]
TIME_ZONES = ["Europe/Paris", "America/New_York", "Asia/Tokyo", "Europe/London", "America/Los_Angeles",
              "Australia/Sydney", "Europe/Berlin", "Asia/Singapore", "America/Chicago", "Africa/Lagos",
              "America/Sao_Paulo", "Asia/Kolkata", "Europe/Madrid", "Pacific/Auckland", "America/Toronto"]
PROMO_CODES = ["SPRING25", "WELCOME10", "FREESHIP", "SAVE15", "VIP2026", "BACK2SCHOOL", "SUMMER40", "THANKYOU5",
               "NEWYEAR20", "FLASH30", "LOYAL10", "BUNDLE3"]
SERVICES = ["payments-api", "checkout", "auth-service", "search", "notifications", "billing-worker", "inventory-api",
            "web-frontend", "recommendations", "order-router", "image-resizer", "user-profile"]
HOSTS = ["www", "api", "mail", "status", "shop", "blog", "cdn", "docs", "staging", "vpn"]
