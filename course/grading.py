"""What a grade cell imports: `from course.grading import check`.

nbgrader keeps every grade cell's source in the gradebook, so this import path is frozen.
It is the kernel side only (course.grader.probe); judging happens in the grader.
"""

from course.grader.probe import check

__all__ = ["check"]
