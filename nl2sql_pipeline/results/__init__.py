"""Stored runs read back: the frame codec, verdicts and scores by run, comparisons of two runs, the leaderboard, exports."""
