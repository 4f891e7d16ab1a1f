"""Deep research (seed 004) behind the same engine port as the quick loop: a plan of
sub-questions scaled to the subject, researchers in parallel sharing one source registry and
page cache, the supervisor's coverage check, and the report written once with its fallback.
The engine is `bot.agent.deep.engine.DeepResearch`."""
