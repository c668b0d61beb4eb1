"""The suite. `course` is imported first: it spares each test process the IRI grammar that
jsonschema would compile when nbformat is imported (course/__init__.py).
"""

import course  # noqa: F401
