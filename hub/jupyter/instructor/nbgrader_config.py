# The instructor set-up on the class's hub (nbgrader's "one class, one grader"): the
# course directory in the instructor's home, whose own nbgrader_config.py holds the rest.
import os

c = get_config()  # noqa: F821
c.CourseDirectory.root = os.environ["COURSE_ROOT"]
c.CourseDirectory.course_id = "everything-leaks"
c.Exchange.root = os.environ.get("NBGRADER_EXCHANGE", "/srv/nbgrader/exchange")
