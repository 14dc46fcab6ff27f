"""Simtracker: a GitLab-like issue tracker (projects, members and roles, issues with labels,
milestones, assignees, due dates and links, comments with system notes, notifications,
a due-date reminder timer)."""
from simweb.runtime.definition import AppDefinition, AppLimits

APP = AppDefinition(
    name="issues",
    title="Simtracker",
    package="simweb.apps.issues",
    world="simweb.apps.issues.world:IssuesWorld",
    functions="simweb.apps.issues.functions:FUNCTIONS",
    tasks="simweb.apps.issues.tasks:TASKS",
    verifiers="simweb.verifiers.issues",
    default_size=10_000,
    description="An issue tracker with 10,000 issues in 40 projects (scales to 100,000+).",
    # at least 30% of the templates medium or hard (WebGym's fact-count buckets)
    limits=AppLimits(min_hard_share=0.30),
)
