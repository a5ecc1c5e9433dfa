"""Word tables of the bundled store: 40 product types in WebShop's five categories, written for this project.

Each :class:`ProductType` says how its products are named, which attributes they can have (split by how a WebShop
instruction phrases them: "*non slip* running shoes *with* memory foam *for* trail running"), which options they are
sold in and at what price. :mod:`agentgym_bench.envs.webshop.catalog` draws products and goals from these tables.
All text is lower-case ASCII except title phrases.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OptionSpec:
    """An option a product is sold in: its name, the values to draw from, and how many a product offers.

    ``run=True`` draws a contiguous run of ``values`` (sizes); otherwise a random subset in table order.
    """

    name: str
    values: tuple[str, ...]
    count: tuple[int, int]
    run: bool = False


@dataclass(frozen=True)
class ProductType:
    """One kind of product (WebShop's ``query``): names, category path, attributes, options and price range."""

    category: str
    query: str
    path: str
    title: str
    plural: str
    nouns: tuple[str, ...]
    adjectives: tuple[str, ...]
    components: tuple[str, ...]
    uses: tuple[str, ...]
    options: tuple[OptionSpec, ...]
    price: tuple[float, float]


def _o(name: str, values: str, lo: int, hi: int, run: bool = False) -> OptionSpec:
    return OptionSpec(name, tuple(v.strip() for v in values.split(",")), (lo, hi), run)


def _t(category, query, path, title, plural, nouns, adjectives, components, uses, options, price):
    split = lambda text: tuple(v.strip() for v in text.split(","))  # noqa: E731
    return ProductType(category, query, path, title, plural, tuple(nouns.split()), split(adjectives),
                       split(components), split(uses), tuple(options), price)


APPAREL_COLORS = ("black, white, navy blue, grey, red, pink, beige, brown, green, light blue, purple, olive, "
                  "khaki, burgundy")
HOME_COLORS = "white, black, grey, beige, brown, navy blue, green, ivory, taupe, teal, blush pink, mustard yellow"
WOOD_COLORS = "walnut, espresso, natural oak, black, white, grey wash, rustic brown, cherry"
TECH_COLORS = "black, white, silver, space grey, blue, red, rose gold, green, purple"
APPAREL_SIZES = "x-small, small, medium, large, x-large, xx-large, 3x-large"
MEN_SHOE_SIZES = "6, 6.5, 7, 7.5, 8, 8.5, 9, 9.5, 10, 10.5, 11, 11.5, 12, 13"
WOMEN_SHOE_SIZES = "5, 5.5, 6, 6.5, 7, 7.5, 8, 8.5, 9, 9.5, 10, 11"
BED_SIZES = "twin, twin xl, full, queen, king, california king"
PACKS = "pack of 1, pack of 2, pack of 3, pack of 4, pack of 6, pack of 8, pack of 12, pack of 24"
OUNCES = "1.7 fl oz, 3.4 fl oz, 6.7 fl oz, 8 fl oz, 12 fl oz, 16 fl oz, 33.8 fl oz"
SCENTS = "lavender, unscented, fresh linen, citrus, coconut, eucalyptus, rose, sandalwood, vanilla, ocean breeze"

PRODUCT_TYPES: tuple[ProductType, ...] = (
    # ----- beauty -------------------------------------------------------------------------------------------------
    _t("beauty", "shampoo", "Beauty & Personal Care > Hair Care > Shampoo & Conditioner > Shampoos",
       "Shampoo", "shampoos", "shampoo",
       "sulfate free, paraben free, cruelty free, color safe, travel size, salon quality",
       "argan oil, tea tree, coconut oil, keratin, biotin",
       "dry hair, hair loss, damaged hair, oily scalp, curly hair",
       [_o("scent", SCENTS, 2, 4), _o("size", OUNCES, 2, 4, run=True)], (6, 38)),
    _t("beauty", "face moisturizers", "Beauty & Personal Care > Skin Care > Face > Creams & Moisturizers",
       "Face Moisturizer", "face moisturizers", "face moisturizer",
       "oil free, fragrance free, non comedogenic, dermatologist tested, cruelty free, lightweight",
       "hyaluronic acid, vitamin c, shea butter, aloe vera, retinol",
       "dry skin, sensitive skin, fine lines, dark spots, oily skin",
       [_o("size", OUNCES, 2, 3, run=True)], (9, 60)),
    _t("beauty", "lipstick", "Beauty & Personal Care > Makeup > Lips > Lipstick",
       "Matte Lipstick", "lipsticks", "lipstick",
       "long lasting, highly pigmented, cruelty free, waterproof, paraben free, vegan",
       "shea butter, vitamin e, jojoba oil, hydrating formula",
       "dry lips, daily wear, special occasions, date night",
       [_o("color", "ruby red, nude pink, berry, coral, mauve, plum, dusty rose, brick red, peach, wine", 3, 6)],
       (5, 30)),
    _t("beauty", "nail polish", "Beauty & Personal Care > Foot, Hand & Nail Care > Nail Art & Polish > Nail Polish",
       "Nail Polish", "nail polishes", "nail polish",
       "quick dry, long lasting, non toxic, chip resistant, high gloss, vegan",
       "top coat, base coat, gel formula, brush applicator",
       "salon manicure, home manicure, nail art, pedicure",
       [_o("color", "classic red, blush pink, navy blue, black, white, coral, lilac, mint green, gold glitter, "
           "nude", 3, 6)],
       (4, 25)),
    _t("beauty", "makeup brush sets",
       "Beauty & Personal Care > Tools & Accessories > Makeup Brushes & Tools > Brush Sets",
       "Makeup Brush Set", "makeup brush sets", "makeup brush set",
       "cruelty free, easy clean, travel friendly, high quality, soft dense, vegan",
       "synthetic bristles, storage case, wooden handles, cosmetic bag",
       "eye shadow, foundation, blending, contouring",
       [_o("color", "black, rose gold, pink, white, champagne, marble, purple", 2, 4)], (8, 45)),
    _t("beauty", "body lotion", "Beauty & Personal Care > Skin Care > Body > Moisturizers > Lotions",
       "Body Lotion", "body lotions", "body lotion",
       "fast absorbing, fragrance free, non greasy, paraben free, dermatologist tested",
       "shea butter, cocoa butter, coconut oil, colloidal oatmeal",
       "dry skin, eczema, sensitive skin, daily use",
       [_o("scent", SCENTS, 2, 4), _o("size", OUNCES, 2, 3, run=True)], (5, 35)),
    _t("beauty", "hair dryers", "Beauty & Personal Care > Hair Care > Styling Tools & Appliances > Hair Dryers",
       "Ionic Hair Dryer", "hair dryers", "hair dryer",
       "ionic, lightweight, fast drying, low noise, foldable",
       "diffuser, concentrator nozzle, cool shot button, ceramic tourmaline",
       "curly hair, thick hair, travel, salon use",
       [_o("color", "black, white, pink, rose gold, purple, teal", 2, 4)], (19, 120)),
    _t("beauty", "deodorant", "Beauty & Personal Care > Personal Care > Deodorants & Antiperspirants > Deodorant",
       "Natural Deodorant", "deodorants", "deodorant",
       "aluminum free, long lasting, cruelty free, baking soda free, travel size",
       "essential oils, activated charcoal, shea butter, probiotics",
       "sensitive skin, all day protection, men, women",
       [_o("scent", SCENTS, 2, 4), _o("size", PACKS, 2, 3, run=True)], (4, 22)),
    # ----- electronics --------------------------------------------------------------------------------------------
    _t("electronics", "wireless earbuds", "Electronics > Headphones, Earbuds & Accessories > Earbuds",
       "Wireless Earbuds", "wireless earbuds", "earbuds",
       "noise cancelling, water resistant, sweat proof, lightweight, low latency",
       "charging case, touch control, built in microphone, bluetooth",
       "running, workout, phone calls, gaming",
       [_o("color", TECH_COLORS, 2, 4)], (15, 150)),
    _t("electronics", "over ear headphones",
       "Electronics > Headphones, Earbuds & Accessories > Headphones > Over-Ear Headphones",
       "Over Ear Headphones", "over ear headphones", "ear headphones",
       "noise cancelling, foldable, wireless, high fidelity, comfortable",
       "memory foam cushions, detachable cable, built in microphone, carrying case",
       "travel, studio monitoring, gaming, home office",
       [_o("color", TECH_COLORS, 2, 4)], (25, 300)),
    _t("electronics", "portable power banks",
       "Electronics > Cell Phones & Accessories > Chargers & Power Adapters > Portable Power Banks",
       "Portable Charger Power Bank", "portable chargers", "charger power bank",
       "fast charging, slim, high capacity, lightweight, dual port",
       "usb c, led display, built in cables, wireless charging",
       "iphone, android phones, travel, camping",
       [_o("color", "black, white, blue, pink, green", 2, 3),
        _o("capacity", "5000mah, 10000mah, 20000mah, 26800mah", 2, 3, run=True)], (12, 70)),
    _t("electronics", "phone cases",
       "Electronics > Cell Phones & Accessories > Cases, Holsters & Sleeves > Basic Cases",
       "Phone Case", "phone cases", "phone case",
       "shockproof, slim fit, anti scratch, military grade, clear back",
       "kickstand, card holder, screen protector, magnetic ring",
       "iphone, samsung galaxy, google pixel",
       [_o("color", TECH_COLORS + ", clear, black marble", 3, 5)], (6, 30)),
    _t("electronics", "usb c cables",
       "Electronics > Computers & Accessories > Cables & Accessories > Cables > USB Cables",
       "USB C Cable", "usb c cables", "usb cable",
       "fast charging, braided, durable, tangle free",
       "nylon braiding, aluminum connectors, data transfer, velcro strap",
       "macbook, android phones, ipad, laptops",
       [_o("length", "3 feet, 6 feet, 10 feet, 15 feet", 2, 3, run=True),
        _o("color", "black, white, red, blue, grey", 2, 3)],
       (5, 25)),
    _t("electronics", "bluetooth speakers", "Electronics > Portable Audio & Video > Portable Bluetooth Speakers",
       "Bluetooth Speaker", "bluetooth speakers", "bluetooth speaker",
       "waterproof, portable, loud, rugged, compact",
       "deep bass, stereo pairing, long battery life, carabiner",
       "outdoor parties, shower, camping, beach",
       [_o("color", TECH_COLORS, 2, 4)], (20, 180)),
    _t("electronics", "wireless mouse",
       "Electronics > Computers & Accessories > Computer Accessories & Peripherals > "
       "Keyboards, Mice & Accessories > Mice",
       "Wireless Mouse", "wireless mice", "mouse",
       "ergonomic, silent click, rechargeable, lightweight, adjustable dpi",
       "usb receiver, side buttons, bluetooth, scroll wheel",
       "laptop, office, gaming, travel",
       [_o("color", TECH_COLORS, 2, 4)], (9, 60)),
    _t("electronics", "smart watches", "Electronics > Wearable Technology > Smartwatches",
       "Smart Watch", "smart watches", "watch",
       "waterproof, lightweight, fast charging, customizable",
       "heart rate monitor, sleep tracking, gps, blood oxygen",
       "fitness tracking, android phones, iphone, swimming",
       [_o("color", TECH_COLORS, 2, 3), _o("size", "40mm, 42mm, 44mm, 46mm", 2, 2, run=True)], (25, 250)),
    # ----- fashion ------------------------------------------------------------------------------------------------
    _t("fashion", "men's running shoes", "Clothing, Shoes & Jewelry > Men > Shoes > Athletic > Running > Road Running",
       "Men's Running Shoes", "men's running shoes", "men running shoes",
       "non slip, lightweight, breathable, shock absorbing, lace up",
       "memory foam, rubber sole, arch support, mesh upper",
       "road running, walking, gym workout, trail running",
       [_o("color", APPAREL_COLORS, 3, 5), _o("size", MEN_SHOE_SIZES, 4, 8, run=True)], (25, 120)),
    _t("fashion", "women's sandals", "Clothing, Shoes & Jewelry > Women > Shoes > Sandals > Flat Sandals",
       "Women's Flat Sandals", "women's sandals", "women sandals",
       "open toe, non slip, adjustable, comfortable, lightweight",
       "ankle strap, arch support, cork footbed, rubber sole",
       "summer, beach, everyday wear, vacation",
       [_o("color", APPAREL_COLORS, 3, 5), _o("size", WOMEN_SHOE_SIZES, 4, 8, run=True)], (15, 80)),
    _t("fashion", "men's polo shirts", "Clothing, Shoes & Jewelry > Men > Clothing > Shirts > Polos",
       "Men's Polo Shirt", "men's polo shirts", "men polo shirt",
       "slim fit, short sleeve, moisture wicking, machine wash, quick dry",
       "button placket, chest pocket, cotton blend, ribbed collar",
       "golf, casual wear, work, tennis",
       [_o("color", APPAREL_COLORS, 3, 5), _o("size", APPAREL_SIZES, 4, 6, run=True)], (12, 55)),
    _t("fashion", "women's yoga pants",
       "Clothing, Shoes & Jewelry > Women > Clothing > Active > Active Pants > Leggings",
       "Women's Yoga Pants", "women's yoga pants", "women yoga pants",
       "high waist, tummy control, squat proof, stretchy, moisture wicking",
       "side pockets, hidden pocket, brushed fabric, wide waistband",
       "yoga, running, workout, everyday wear",
       [_o("color", APPAREL_COLORS, 3, 5), _o("size", APPAREL_SIZES, 4, 6, run=True)], (12, 50)),
    _t("fashion", "men's winter jackets",
       "Clothing, Shoes & Jewelry > Men > Clothing > Jackets & Coats > Down & Down Alternative",
       "Men's Winter Jacket", "men's winter jackets", "men winter jacket",
       "waterproof, windproof, warm, lightweight, packable",
       "detachable hood, fleece lining, zipper pockets, down insulation",
       "skiing, hiking, cold weather, snow",
       [_o("color", APPAREL_COLORS, 3, 5), _o("size", APPAREL_SIZES, 4, 6, run=True)], (35, 180)),
    _t("fashion", "women's summer dresses", "Clothing, Shoes & Jewelry > Women > Clothing > Dresses > Casual",
       "Women's Summer Dress", "women's summer dresses", "women summer dress",
       "floral print, short sleeve, v neck, flowy, casual",
       "pockets, tie waist, ruffle hem, smocked bodice",
       "beach, party, wedding guest, daily wear",
       [_o("color", APPAREL_COLORS, 3, 5), _o("size", APPAREL_SIZES, 4, 6, run=True)], (18, 70)),
    _t("fashion", "athletic socks", "Clothing, Shoes & Jewelry > Men > Clothing > Socks > Athletic Socks",
       "Athletic Crew Socks", "athletic crew socks", "crew socks",
       "cushioned, moisture wicking, breathable, odor resistant",
       "arch compression, reinforced heel, cotton blend, seamless toe",
       "running, hiking, everyday wear, sports",
       [_o("color", "black, white, grey, navy blue, multicolor", 2, 4), _o("size", PACKS, 2, 4, run=True)], (8, 30)),
    _t("fashion", "laptop backpacks",
       "Clothing, Shoes & Jewelry > Luggage & Travel Gear > Backpacks > Laptop Backpacks",
       "Laptop Backpack", "laptop backpacks", "laptop backpack",
       "water resistant, anti theft, lightweight, durable",
       "usb charging port, laptop compartment, padded straps, luggage strap",
       "travel, college, business, hiking",
       [_o("color", APPAREL_COLORS, 2, 4)], (18, 90)),
    # ----- grocery ------------------------------------------------------------------------------------------------
    _t("grocery", "protein bars", "Grocery & Gourmet Food > Snack Foods > Bars > Protein Bars",
       "Protein Bars", "protein bars", "protein bars",
       "gluten free, low sugar, high protein, keto friendly, non gmo, plant based",
       "whey protein, almonds, collagen, fiber",
       "snacking, post workout, meal replacement",
       [_o("flavor name", "chocolate chip, peanut butter, cookie dough, birthday cake, salted caramel, "
           "mixed berry, cinnamon roll, double chocolate", 2, 4), _o("size", PACKS, 2, 3, run=True)], (10, 45)),
    _t("grocery", "ground coffee",
       "Grocery & Gourmet Food > Beverages > Coffee, Tea & Cocoa > Coffee > Ground Coffee",
       "Ground Coffee", "ground coffee", "ground coffee",
       "organic, fair trade, medium roast, dark roast, low acid, decaf",
       "arabica beans, single origin beans, resealable bag",
       "drip coffee makers, french press, espresso machines, cold brew",
       [_o("flavor name", "original, hazelnut, french vanilla, mocha, breakfast blend, colombian, cinnamon", 2, 4),
        _o("size", "10 ounce, 12 ounce, 16 ounce, 32 ounce, 2 pound", 2, 3, run=True)], (7, 30)),
    _t("grocery", "green tea", "Grocery & Gourmet Food > Beverages > Coffee, Tea & Cocoa > Tea > Green Tea",
       "Green Tea", "green tea", "green tea",
       "organic, non gmo, kosher, unsweetened, caffeine free",
       "tea bags, loose leaf, antioxidants, ginseng",
       "weight loss, relaxation, morning routine, iced tea",
       [_o("flavor name", "jasmine, matcha, lemon ginger, mint, honey, peach, pomegranate", 2, 4),
        _o("size", PACKS, 2, 3, run=True)], (5, 25)),
    _t("grocery", "potato chips", "Grocery & Gourmet Food > Snack Foods > Chips & Crisps > Potato Chips",
       "Kettle Potato Chips", "potato chips", "potato chips",
       "kettle cooked, gluten free, non gmo, vegan, low sodium",
       "avocado oil, real potatoes, thick cut",
       "lunch boxes, parties, snacking, road trips",
       [_o("flavor name", "sea salt, barbecue, sour cream and onion, salt and vinegar, jalapeno, cheddar, "
           "black pepper, dill pickle", 2, 5), _o("size", PACKS, 2, 3, run=True)], (3, 30)),
    _t("grocery", "olive oil", "Grocery & Gourmet Food > Pantry Staples > Cooking Oils & Sprays > Oils > Olive Oil",
       "Extra Virgin Olive Oil", "olive oil", "olive oil",
       "extra virgin, cold pressed, organic, unfiltered, non gmo",
       "glass bottle, polyphenols, harvest date",
       "cooking, salad dressing, dipping, baking",
       [_o("size", "16.9 fl oz, 25.3 fl oz, 33.8 fl oz, 50.7 fl oz, 1 gallon", 2, 4, run=True)], (8, 45)),
    _t("grocery", "trail mix", "Grocery & Gourmet Food > Snack Foods > Nuts & Seeds > Trail Mix",
       "Trail Mix", "trail mix", "trail mix",
       "gluten free, non gmo, unsalted, high protein, vegan",
       "almonds, cashews, dried cranberries, pumpkin seeds",
       "hiking, snacking, lunch boxes, road trips",
       [_o("flavor name", "classic, tropical, sweet and salty, dark chocolate, honey nut", 2, 4),
        _o("size", PACKS, 2, 3, run=True)], (6, 30)),
    _t("grocery", "honey", "Grocery & Gourmet Food > Pantry Staples > Jams, Jellies & Sweet Spreads > Honey",
       "Raw Honey", "honey", "honey",
       "raw, unfiltered, organic, pure, kosher",
       "squeeze bottle, glass jar, honeycomb",
       "tea, baking, seasonal allergies, breakfast",
       [_o("flavor name", "clover, wildflower, manuka, orange blossom, buckwheat", 2, 4),
        _o("size", "12 ounce, 16 ounce, 32 ounce, 5 pound", 2, 3, run=True)], (6, 40)),
    _t("grocery", "pasta", "Grocery & Gourmet Food > Pantry Staples > Pasta & Noodles > Pasta",
       "Pasta", "pasta", "pasta",
       "gluten free, organic, whole wheat, high fiber, non gmo",
       "chickpea flour, brown rice, durum wheat, lentils",
       "family dinners, meal prep, kids, quick meals",
       [_o("style", "penne, spaghetti, rotini, elbows, fusilli, linguine", 2, 4), _o("size", PACKS, 2, 3, run=True)],
       (3, 28)),
    # ----- garden (home & kitchen) --------------------------------------------------------------------------------
    _t("garden", "sofas and couches", "Home & Kitchen > Furniture > Living Room Furniture > Sofas & Couches",
       "Sofa Couch", "sofas and couches", "sofa couch",
       "mid century, modern, easy assembly, tufted, convertible",
       "wood frame, linen fabric, memory foam, removable cushions",
       "living room, small spaces, apartment, office",
       [_o("color", HOME_COLORS, 2, 4)], (150, 850)),
    _t("garden", "office chairs",
       "Home & Kitchen > Furniture > Home Office Furniture > Home Office Chairs > Home Office Desk Chairs",
       "Office Chair", "office chairs", "office chair",
       "ergonomic, adjustable height, swivel, high back, breathable",
       "lumbar support, mesh back, padded armrests, headrest",
       "home office, gaming, study, long hours",
       [_o("color", "black, white, grey, blue, pink, brown", 2, 4)], (60, 400)),
    _t("garden", "bed sheets", "Home & Kitchen > Bedding > Sheets & Pillowcases > Sheet & Pillowcase Sets",
       "Bed Sheet Set", "bed sheet sets", "bed sheet set",
       "deep pocket, wrinkle free, breathable, hypoallergenic, machine washable",
       "microfiber, egyptian cotton, pillowcases, bamboo viscose",
       "hot sleepers, kids room, guest room, all seasons",
       [_o("color", HOME_COLORS, 3, 5), _o("size", BED_SIZES, 3, 5, run=True)], (20, 120)),
    _t("garden", "throw pillow covers",
       "Home & Kitchen > Home Decor Products > Decorative Pillows, Inserts & Covers > Throw Pillow Covers",
       "Throw Pillow Covers", "throw pillow covers", "throw pillow covers",
       "machine washable, soft, decorative, double sided",
       "hidden zipper, velvet fabric, linen fabric, tassels",
       "couch, bedroom, living room, farmhouse decor",
       [_o("color", HOME_COLORS, 3, 5), _o("size", "16 x 16 inch, 18 x 18 inch, 20 x 20 inch, 24 x 24 inch", 2, 3,
                                           run=True)], (8, 35)),
    _t("garden", "coffee tables", "Home & Kitchen > Furniture > Living Room Furniture > Tables > Coffee Tables",
       "Coffee Table", "coffee tables", "coffee table",
       "easy assembly, rustic, modern, lift top, sturdy",
       "storage shelf, metal frame, solid wood, glass top",
       "living room, small spaces, apartment, reception room",
       [_o("color", WOOD_COLORS, 2, 4)], (50, 350)),
    _t("garden", "cookware sets", "Home & Kitchen > Kitchen & Dining > Cookware > Pots & Pans > Cookware Sets",
       "Cookware Set", "cookware sets", "cookware set pots pans",
       "non stick, dishwasher safe, oven safe, induction compatible",
       "stainless steel, glass lids, ceramic coating, cool touch handles",
       "gas stoves, induction cooktops, everyday cooking",
       [_o("color", "black, grey, red, cream, sage green, blue", 2, 3),
        _o("size", "5 piece, 8 piece, 10 piece, 12 piece, 15 piece", 2, 3, run=True)], (40, 300)),
    _t("garden", "bath towels", "Home & Kitchen > Bath > Towels > Bath Towels",
       "Bath Towels", "bath towels", "bath towels",
       "quick dry, highly absorbent, soft, lint free, machine washable",
       "ring spun cotton, bamboo fiber, hanging loops",
       "bathroom, gym, spa, hotel",
       [_o("color", HOME_COLORS, 3, 5), _o("size", PACKS, 2, 3, run=True)], (15, 60)),
    _t("garden", "desk lamps", "Home & Kitchen > Lighting & Ceiling Fans > Lamps & Shades > Desk Lamps",
       "LED Desk Lamp", "desk lamps", "desk lamp",
       "dimmable, eye caring, touch control, adjustable, energy efficient",
       "usb charging port, led light, flexible gooseneck, night light",
       "reading, study, office, bedroom",
       [_o("color", "black, white, silver, gold, wood grain", 2, 3)], (15, 80)),
)

BRAND_HEADS = ("Nor", "Vel", "Zan", "Kor", "Lum", "Bri", "Ost", "Cal", "Tav", "Mir", "Dax", "Fen", "Ral", "Sol", "Ver",
               "Quin", "Hal", "Jor", "Pex", "Wyn", "Ember", "Alto", "Bel", "Cor")
BRAND_TAILS = ("via", "tek", "ora", "ix", "ara", "ell", "don", "ova", "ium", "eon", "ly", "ano", "ex", "ita", "wood")

DESCRIPTION_OPENERS = (
    "Meet the {brand} {kind}.",
    "{brand} {kind}, built for everyday use.",
    "Designed by {brand} to last.",
    "Quality and value from {brand}.",
    "Upgrade your routine with {brand}.",
)
DESCRIPTION_CLOSERS = (
    "Backed by friendly customer service.",
    "A thoughtful gift for friends and family.",
    "Satisfaction guaranteed or your money back.",
    "Carefully packed and shipped fast.",
    "Loved by thousands of happy customers.",
    "",
)
REVIEW_TEMPLATES = (
    ("Great purchase", 5, "Exactly what I was looking for. Would buy again."),
    ("Good value", 4, "Works well for the price. Shipping was quick."),
    ("Not bad", 3, "Does the job, but the quality could be better."),
    ("Love it", 5, "Better than expected, I use it every day."),
    ("Disappointed", 2, "It did not match the description as well as I hoped."),
)
INSTRUCTION_OPENERS = ("Find me", "i am looking for", "i need", "i want to buy", "i would like")
