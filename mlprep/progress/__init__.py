"""What mlprep remembers of the learner: the progress store (SQLite), the spaced-review schedule (SM-2),
and where the learner stands (what `mlprep progress` shows).

    store       attempts, grades, hints, reveals, practice time, reviews, interviews
    schedule    SM-2: when an item is due, and how a result moves it
    standing    mastery per topic, time, streaks
"""
