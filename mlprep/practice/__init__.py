"""What a learner does: attempts, grading them, the practice loop, mock interviews, spaced reviews, and
question sets asked in the terminal. The core the commands (mlprep.cli) and `pytest --mlprep` call.

    attempts    where an attempt is, starting it, resetting it, the solution once it may be shown
    grading     what to grade, grading it (one function for every kind), diagnosis, repro scripts
    watch       the practice loop: regrade on every save, single-key commands
    interview   a mock interview against a countdown, and its report
    review      the spaced-review schedule and session
    questions   a quiz, an interview's follow-ups, a missed question, asked here
"""
