"""What a student variant is, for the mutation harness (tests/test_mutants.py): defined in
the package, course.authoring.variants, which `course bench --bands` reads them with."""

from course.authoring.variants import Alternate, Convention, Mutant, m, wrong

__all__ = ["Alternate", "Convention", "Mutant", "m", "wrong"]
