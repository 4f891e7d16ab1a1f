"""Follow-up questions: a question about a finished run, answered from that run's stored
evidence, researched a little further only when it must be. The engine is
`bot.agent.followup.engine.FollowUpEngine`; `answer` checks and shapes what it says."""
