"""Seed schemas of the held-out *unseen* tool library: domains that never appear in training
(`blueprints.TRAIN_BLUEPRINTS`), with names that never appear there either (`library.check_disjoint`
proves both every time a library is built). Only `unseen.py` (the eval suite writer) reads this file;
the training library never does. Same notation as `blueprints.py`.
"""

UNSEEN_BLUEPRINTS: dict[str, list[str]] = {
    "astronomy": [
        "get_moon_phase: Get the phase of the moon on a date | date:date=The night to check",
        "find_visible_planets: List the planets visible tonight from a city | city:str=Observer's city; ?min_altitude_deg:int/10=Lowest altitude above the horizon in degrees",
        "next_meteor_shower: Find the next meteor shower and its peak | ?hemisphere:enum(northern,southern)/northern=Observer's hemisphere",
        "star_rise_time: Get when a star rises at a place | star:enum(Sirius,Vega,Arcturus,Betelgeuse,Rigel,Polaris)=Star name; city:str=Observer's city; date:date=The night",
        "iss_pass_times: Predict passes of the space station over a city | city:str=City name; ?passes:int/3=Number of passes to list",
        "light_travel_time: Compute how long light takes to cover a distance | distance_km:num=Distance in kilometers",
    ],
    "gardening": [
        "watering_schedule: Suggest how often to water a plant | plant:enum(tomato,basil,rose,fern,cactus,orchid,lavender)=Plant name; ?climate:enum(dry,temperate,humid)/temperate=Local climate",
        "frost_dates: Get the average first and last frost dates for a town | city:str=Town name",
        "compost_ratio: Work out the greens-to-browns mix for a compost pile | greens_kg:num=Green material in kilograms; browns_kg:num=Brown material in kilograms",
        "plant_spacing: Recommend spacing between seedlings in a bed | crop:enum(lettuce,carrot,squash,bean,pepper,onion)=Crop; bed_length_cm:int=Bed length in centimeters",
        "soil_ph_advice: Advise how to correct soil acidity | current_ph:num=Measured soil pH; target_ph:num=Desired soil pH",
        "pest_identifier: Identify a garden pest from what it does | damage:str=What the damage looks like; ?plant:str=Affected plant",
    ],
    "pets": [
        "pet_food_portion: Work out a daily food portion for a pet | species:enum(dog,cat,rabbit)=Kind of pet; weight_kg:num=Pet weight in kilograms",
        "find_veterinarian: Find a vet clinic near a place | city:str=City or area; ?emergency:bool/false=Open for emergencies",
        "vaccination_due: Check which vaccinations a pet needs next | pet_name:str=The pet's name; age_months:int=Age in months",
        "dog_walker_booking: Book a dog walker | dog_name:str=Name of the dog; date:date=Day of the walk; time:time=Start in HH:MM; ?minutes:int/30=Walk length in minutes",
        "adoptable_pets: List pets available for adoption at shelters | city:str=City; ?species:enum(dog,cat,rabbit,bird)=Kind of pet",
        "pet_age_in_human_years: Convert a pet's age to human years | species:enum(dog,cat)=Kind of pet; age_years:int=Pet age in years",
    ],
    "legal": [
        "court_case_lookup: Look up a court case by its docket number | docket_number:str=Docket number; ?court:enum(district,appeals,supreme)=Court level",
        "notarize_request: Request a notary appointment | document_title:str=Title of the document; date:date=Preferred date",
        "statute_of_limitations: Get the filing deadline for a type of claim in a country | claim_type:enum(contract,personal injury,property damage,fraud)=Kind of claim; country:str=Country",
        "trademark_search: Search registered trademarks for a name | mark:str=Name or slogan to check; ?jurisdiction:enum(US,EU,UK,JP)/US=Where to search",
        "small_claims_fee: Compute the filing fee of a small claims case | claim_amount:num=Amount claimed",
    ],
    "maritime": [
        "marine_forecast: Get the sea forecast for a coastal area | coast:str=Coastal city; ?hours:int/24=Hours ahead",
        "nautical_miles_between_ports: Get the sailing distance between two ports | port_a:str=First port city; port_b:str=Second port city",
        "reserve_mooring: Reserve a mooring for a boat | marina:str=Marina city; arrival:date=Arrival date; boat_length_m:num=Boat length in meters",
        "knots_to_kmh: Convert a boat speed from knots | knots:num=Speed in knots",
        "ferry_departures: List ferry departures from a port | port:str=Departure port city; ?date:date=The day",
    ],
}
