"""Synthetic identified radiology text with known identifier spans, for the de-identification
bench (bench/deidentify.py) and the tests. Django-free; every value is made up.

`sentences(n, seed)` gives single sentences each carrying one or two identifiers in the formats
reports use; `reports(n, seed)` whole reports (header, history, findings, impression, signature)
in which every Safe Harbor kind occurs. Names come from several cultures, on purpose many absent
from the census lists the name recognizer reads; dates in nine notations.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

# (given, family) pools: English, Hispanic, West African, South Asian, Chinese, Japanese, Korean,
# Vietnamese, Arabic, Slavic, German, Nordic, French, Italian, Greek, Turkish, Irish.
GIVEN = (
    "James Mary Robert Patricia Michael Linda William Elizabeth David Jennifer "
    "José María Alejandro Lucía Carmen Javier Guadalupe Mateo "
    "Oluwaseun Chinedu Amaka Ngozi Kwame Abena Tunde Folake "
    "Priya Rajesh Anjali Vikram Sunita Arjun Lakshmi Sanjay "
    "Wei Xiaoming Li Mei Jian Hui "
    "Hiroshi Yuki Takeshi Aiko Kenji Haruka "
    "Min-jun Seo-yeon Ji-hoon "
    "Thanh Minh Huong "
    "Mohammed Fatima Ahmed Aisha Omar Layla Youssef "
    "Dmitri Olga Sergei Katarzyna Piotr "
    "Jürgen Greta Klaus Ingrid Lars Astrid "
    "Amélie Théo Giulia Lorenzo Eleni Nikos Mehmet Ayşe Siobhan Cormac"
).split()
FAMILY = (
    "Smith Johnson Williams Brown Miller Davis Wilson Anderson Thompson Clark "
    "García Rodríguez Hernández López Martínez Gonzalez Pérez Sánchez "
    "Okafor Adeyemi Mensah Nwosu Boateng Eze Abiodun Olawale "
    "Patel Raghunathan Sharma Iyer Chatterjee Reddy Venkataraman Gupta "
    "Wang Zhang Liu Chen Huang Zhao "
    "Tanaka Suzuki Takahashi Watanabe Yamamoto Nakamura "
    "Kim Park Choi Jeong "
    "Nguyen Tran Pham "
    "Al-Rashid Haddad Mansour Khalil Nasser El-Sayed "
    "Ivanov Kowalski Nowak Petrova Sokolov "
    "Müller Schmidt Becker Johansson Lindqvist Andersen "
    "Dubois Lefèvre Rossi Bianchi Papadopoulos Yılmaz O'Brien McAllister"
).split()

MONTHS = "January February March April May June July August September October November December".split()

# Medical sentences: what must reach the model intact.
FINDINGS = (
    "There is a 1.2 x 0.8 cm spiculated mass in the right upper lobe.",
    "No pleural effusion or pneumothorax.",
    "Mild bibasilar atelectasis.",
    "The heart size is normal.",
    "Degenerative disc disease at L4-L5 with mild foraminal narrowing.",
    "There are 2 hyperenhancing liver lesions, the largest measuring 14 mm in segment VII.",
    "No acute intracranial hemorrhage, mass effect or midline shift.",
    "Small right pleural effusion with adjacent compressive atelectasis.",
    "The gallbladder is distended with layering sludge; no pericholecystic fluid.",
    "Scattered T2 hyperintense foci in the periventricular white matter, likely chronic small vessel "
    "ischemic change.",
    "Moderate stenosis of the left internal carotid artery.",
    "A 5 mm nonobstructing calculus in the lower pole of the left kidney.",
    "Ground-glass opacity in the left lower lobe, new since the prior exam.",
    "Mild hepatomegaly with diffuse fatty infiltration.",
    "The appendix is normal in caliber.",
    "Healing fracture of the right fifth metatarsal with callus formation.",
    "BI-RADS 4: suspicious abnormality, biopsy should be considered.",
    "No evidence of deep vein thrombosis in the left lower extremity.",
    "Stable 6 mm pulmonary nodule in the lingula.",
    "Enlarged mediastinal lymph nodes, the largest 1.8 cm in the subcarinal station.",
    "The aorta is of normal caliber without dissection.",
    "Mild cardiomegaly with pulmonary vascular congestion.",
    "Subchondral cyst formation and joint space narrowing of the medial compartment.",
    "The pancreas is atrophic without ductal dilatation.",
    "Multiple hypodense renal cysts, the largest 3.1 cm, Bosniak I.",
    # Eponyms and capitalised terms: medical words a name recognizer must not erase.
    "Small Baker cyst in the left popliteal fossa.",
    "Schmorl node at the T11 superior endplate.",
    "No Hill-Sachs or Bankart lesion.",
    "Trace free fluid in Morison pouch.",
    "Findings compatible with Crohn disease of the terminal ileum.",
    "Thickened cortex consistent with Paget disease of bone.",
    "Mass measures 42 Hounsfield Units on the Delayed phase.",
    "Wilms tumor is not excluded; Graves disease is noted in the history.",
)
HISTORY = (
    "Cough and fever for two weeks.",
    "Follow-up of known pulmonary nodule.",
    "Right upper quadrant pain.",
    "Fall with left hip pain.",
    "Headache and confusion.",
    "Staging of breast cancer.",
    "Shortness of breath, rule out pulmonary embolism.",
)
IMPRESSIONS = (
    "Suspicious right upper lobe mass; recommend CT-guided biopsy.",
    "No acute cardiopulmonary process.",
    "Findings consistent with acute cholecystitis.",
    "Stable examination compared to prior.",
    "Small right pleural effusion, otherwise unremarkable.",
    "Moderate degenerative change without acute fracture.",
)
STREETS = "Beacon Maple Oak Cedar Elm Washington Lincoln Highland Willow Park Lake Sunset".split()
STREET_TYPES = "Street Avenue Road Boulevard Lane Drive Court Way".split()
CITIES = (
    ("Brookline", "MA", "02446"),
    ("Springfield", "IL", "62704"),
    ("Palo Alto", "CA", "94301"),
    ("Rochester", "MN", "55905"),
    ("Ann Arbor", "MI", "48109"),
    ("Baltimore", "MD", "21287"),
)
HOSTS = "mgh.org stanfordhealth.org mayo.edu umich.org hospital.example.org".split()


@dataclass
class Labelled:
    """A text and its identifier spans (start, end, kind)."""

    text: str = ""
    spans: list[tuple[int, int, str]] = field(default_factory=list)

    def add(self, piece: str, kind: str = "") -> Labelled:
        if kind:
            self.spans.append((len(self.text), len(self.text) + len(piece), kind))
        self.text += piece
        return self


class Identifiers:
    """Made-up identifiers in the notations reports use."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def name(self) -> str:
        r = self.rng
        given, family = r.choice(GIVEN), r.choice(FAMILY)
        shape = r.random()
        if shape < 0.15:
            return f"{given} {r.choice('ABCDEFGHJKLMNPRSTW')}. {family}"
        return f"{given} {family}"

    def family(self) -> str:
        return self.rng.choice(FAMILY)

    def date(self) -> str:
        r = self.rng
        y, m, d = r.randint(1930, 2024), r.randint(1, 12), r.randint(1, 28)
        month = MONTHS[m - 1]
        return r.choice(
            [
                f"{m:02d}/{d:02d}/{y}",
                f"{m}/{d}/{y % 100:02d}",
                f"{y}-{m:02d}-{d:02d}",
                f"{d:02d}.{m:02d}.{y}",
                f"{month} {d}, {y}",
                f"{d} {month} {y}",
                f"{month[:3]} {d}{'th' if d > 3 else ['st', 'nd', 'rd'][d - 1]}, {y}",
                f"{d:02d}-{month[:3].upper()}-{y}",
                f"{month} {y}",
            ]
        )

    def phone(self) -> str:
        r = self.rng
        a, b, c = r.randint(201, 989), r.randint(200, 989), r.randint(1000, 9999)
        return r.choice(
            [f"({a}) {b}-{c}", f"{a}-{b}-{c}", f"{a}.{b}.{c}", f"+1 {a} {b} {c}", f"+44 20 {b}{c // 10} {c}"]
        )

    def email(self, name: str) -> str:
        parts = name.lower().replace(".", "").replace("'", "").split()
        ascii_parts = ["".join(ch for ch in p if ch.isascii() and ch.isalnum()) or "x" for p in parts]
        return f"{ascii_parts[0][0]}.{ascii_parts[-1]}@{self.rng.choice(HOSTS)}"

    def ssn(self) -> str:
        r = self.rng
        return f"{r.randint(100, 665):03d}-{r.randint(10, 99):02d}-{r.randint(1000, 9999):04d}"

    def mrn(self) -> str:
        r = self.rng
        return r.choice(
            [
                f"{r.randint(0, 99999999):08d}",
                f"{r.randint(1000000, 9999999)}",
                f"A{r.randint(1000000, 9999999)}",
            ]
        )

    def accession(self) -> str:
        r = self.rng
        return r.choice(
            [
                f"RAD-{r.randint(2015, 2024)}-{r.randint(0, 9999999):07d}",
                f"{r.randint(10000000, 99999999)}",
                f"CT{r.randint(21, 24)}{r.randint(100000, 999999)}",
                f"ACC{r.randint(1000000, 9999999)}",
            ]
        )

    def device_id(self) -> str:
        r = self.rng
        letters = "".join(r.choice("ABCDEFGHJKLMNPRSTUVWXYZ") for _ in range(3))
        return f"{letters}{r.randint(1000000, 9999999)}"

    def street(self) -> str:
        r = self.rng
        return f"{r.randint(3, 9999)} {r.choice(STREETS)} {r.choice(STREET_TYPES)}"

    def city(self) -> str:
        city, state, zip_code = self.rng.choice(CITIES)
        return f"{city}, {state} {zip_code}"

    def url(self) -> str:
        return f"https://pacs.{self.rng.choice(HOSTS)}/viewer?study={self.rng.randint(100000, 999999)}"

    def ip(self) -> str:
        r = self.rng
        return f"10.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(1, 254)}"

    def old_age(self) -> str:
        return str(self.rng.randint(90, 104))


def _discussed_with(text: Labelled, ids: Identifiers, finding: str) -> None:
    text.add(finding + " Findings discussed with Dr. ").add(ids.name(), "NAME").add(" at ").add(
        ids.phone(), "PHONE"
    )
    text.add(".")


def _prior_study(text: Labelled, ids: Identifiers, finding: str) -> None:
    text.add("Compared with the prior study of ").add(ids.date(), "DATE").add(": " + finding)


def _patient_mrn(text: Labelled, ids: Identifiers, finding: str) -> None:
    text.add("Patient: ").add(ids.name(), "NAME").add(", MRN ").add(ids.mrn(), "MRN").add(".")


def _accession(text: Labelled, ids: Identifiers, finding: str) -> None:
    text.add("Accession #: ").add(ids.accession(), "ACCESSION").add(". " + finding)


def _called_to(text: Labelled, ids: Identifiers, finding: str) -> None:
    text.add(f"{finding} Results were called to ").add(ids.name(), "NAME").add(", RN, on ").add(
        ids.date(), "DATE"
    )
    text.add(".")


def _signed_by(text: Labelled, ids: Identifiers, finding: str) -> None:
    text.add("Electronically signed by ").add(ids.name(), "NAME").add(", MD on ").add(ids.date(), "DATE").add(
        "."
    )


def _contact(text: Labelled, ids: Identifiers, finding: str) -> None:
    name = ids.name()
    text.add("Questions: contact ").add(name, "NAME").add(" at ").add(ids.email(name), "EMAIL").add(".")


def _ssn(text: Labelled, ids: Identifiers, finding: str) -> None:
    text.add("SSN: ").add(ids.ssn(), "SSN").add(". " + finding)


def _age(text: Labelled, ids: Identifiers, finding: str) -> None:
    text.add("The ").add(ids.old_age(), "AGE").add(f"-year-old patient has the following: {finding}")


def _address(text: Labelled, ids: Identifiers, finding: str) -> None:
    text.add("Address: ").add(ids.street(), "LOCATION").add(", ").add(ids.city(), "LOCATION").add(".")


def _images_at(text: Labelled, ids: Identifiers, finding: str) -> None:
    text.add("Images available at ").add(ids.url(), "URL").add(" (workstation ").add(ids.ip(), "IP").add(").")


def _device_serial(text: Labelled, ids: Identifiers, finding: str) -> None:
    text.add(finding + " Pacemaker serial number ").add(ids.device_id(), "ID").add(".")


def _informed_by_phone(text: Labelled, ids: Identifiers, finding: str) -> None:
    text.add(f"{finding} Mrs. ").add(ids.family(), "NAME").add(" was informed by phone (").add(
        ids.phone(), "PHONE"
    )
    text.add(").")


def _birth_date_mrn(text: Labelled, ids: Identifiers, finding: str) -> None:
    text.add("DOB: ").add(ids.date(), "DATE").add("  MRN: ").add(ids.mrn(), "MRN")


def _referring(text: Labelled, ids: Identifiers, finding: str) -> None:
    text.add("Referring physician: Dr. ").add(ids.name(), "NAME").add(", fax ").add(ids.phone(), "PHONE").add(
        "."
    )


def _follow_up(text: Labelled, ids: Identifiers, finding: str) -> None:
    text.add(f"{finding} Follow-up imaging on ").add(ids.date(), "DATE").add(" was recommended by ")
    text.add(ids.name(), "NAME").add(", MD.")


# The sentence shapes, one drawn per sentence: each writes a finding and identifiers into the text.
_SHAPES: tuple[Callable[[Labelled, Identifiers, str], None], ...] = (
    _discussed_with,
    _prior_study,
    _patient_mrn,
    _accession,
    _called_to,
    _signed_by,
    _contact,
    _ssn,
    _age,
    _address,
    _images_at,
    _device_serial,
    _informed_by_phone,
    _birth_date_mrn,
    _referring,
    _follow_up,
)


def _sentence(ids: Identifiers, rng: random.Random) -> Labelled:
    finding = rng.choice(FINDINGS)
    text = Labelled()
    _SHAPES[rng.randrange(len(_SHAPES))](text, ids, finding)
    return text


def sentences(n: int, *, seed: int = 0) -> list[Labelled]:
    rng = random.Random(seed)
    ids = Identifiers(rng)
    return [_sentence(ids, rng) for _ in range(n)]


def _report(ids: Identifiers, rng: random.Random, index: int) -> Labelled:
    r = Labelled()
    patient = ids.name()
    family = patient.split()[-1]
    r.add("RADIOLOGY REPORT\nPatient: ").add(patient, "NAME").add("    MRN: ").add(ids.mrn(), "MRN")
    r.add("    DOB: ").add(ids.date(), "DATE").add("\n")
    if index % 4 == 0:
        r.add("Age: ").add(ids.old_age(), "AGE").add("    ")
    r.add("Accession #: ").add(ids.accession(), "ACCESSION").add("    Exam date: ").add(
        ids.date(), "DATE"
    ).add("\n")
    r.add("Referring physician: Dr. ").add(ids.name(), "NAME").add("    Phone: ").add(
        ids.phone(), "PHONE"
    ).add("\n")
    if index % 3 == 0:
        r.add("Address: ").add(ids.street(), "LOCATION").add(", ").add(ids.city(), "LOCATION").add("\n")
    if index % 5 == 0:
        r.add("SSN: ").add(ids.ssn(), "SSN").add("    Encounter #: ").add(ids.device_id(), "ID").add("\n")
    r.add("\nCLINICAL HISTORY: " + rng.choice(HISTORY) + "\n")
    r.add("TECHNIQUE: CT of the chest with intravenous contrast.\n")
    r.add("COMPARISON: ").add(ids.date(), "DATE").add(".\n\nFINDINGS:\n")
    for finding in rng.sample(FINDINGS, rng.randint(4, 7)):
        r.add(finding + " ")
    if index % 2 == 0:
        title = rng.choice(["Mr.", "Ms.", "Mrs."])
        r.add(f"\n{title} ").add(family, "NAME").add(" tolerated the procedure well.")
    r.add("\n\nIMPRESSION:\n1. " + rng.choice(IMPRESSIONS) + "\n")
    if index % 3 == 1:
        r.add("2. Critical result discussed with Dr. ").add(ids.name(), "NAME").add(" on ").add(
            ids.date(), "DATE"
        )
        r.add(" at ").add(ids.phone(), "PHONE").add(".\n")
    if index % 6 == 2:
        name = ids.name()
        r.add("Contact ").add(name, "NAME").add(" (").add(ids.email(name), "EMAIL").add(") with questions.\n")
    if index % 7 == 3:
        r.add("Key images: ").add(ids.url(), "URL").add(" from workstation ").add(ids.ip(), "IP").add(".\n")
    r.add("\nDictated by: ").add(ids.name(), "NAME").add(", MD\nElectronically signed by Dr. ").add(
        ids.name(), "NAME"
    )
    r.add(" on ").add(ids.date(), "DATE").add("\n")
    return r


def reports(n: int, *, seed: int = 0) -> list[Labelled]:
    rng = random.Random(seed)
    ids = Identifiers(rng)
    return [_report(ids, rng, i) for i in range(n)]
