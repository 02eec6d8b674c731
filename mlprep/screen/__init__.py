"""What the learner sees: plain styled text for the quick commands (term), rich rendering for the rest
(render), sparklines of a failure's series (charts), key presses (keys) and questions asked one by one
(asker). Layout only: what to show comes from the layers below.
"""
