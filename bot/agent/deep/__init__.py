"""Deep research (seed 004) behind the same engine port as the quick loop: a plan of
sub-questions, researchers in parallel sharing one source registry and page cache, a
supervisor's draft, and a final write-up with its fallback chain. The engine is
`bot.agent.deep.engine.DeepResearch`."""
