# The student set-up on the class's hub: nbgrader's assignment list and Validate only.
import os

c = get_config()  # noqa: F821
c.CourseDirectory.course_id = "everything-leaks"
c.Exchange.root = os.environ.get("NBGRADER_EXCHANGE", "/srv/nbgrader/exchange")
