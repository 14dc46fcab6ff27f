"""Simpress: a WordPress-like CMS with an admin (posts and pages under a draft, review,
published, archived workflow; author < editor < admin roles; revisions with diff and
restore; categories and tags; a media library; menus; comment moderation; scheduled
publishing on the simulated clock; a public site that shows only what is published)."""
from simweb.runtime.definition import AppDefinition, AppLimits

APP = AppDefinition(
    name="cms",
    title="Simpress",
    package="simweb.apps.cms",
    world="simweb.apps.cms.world:CmsWorld",
    functions="simweb.apps.cms.functions:FUNCTIONS",
    tasks="simweb.apps.cms.tasks:TASKS",
    verifiers="simweb.verifiers.cms",
    default_size=2400,
    description="A CMS with 2,400 posts and pages, 10,000+ comments and 80 staff users (scales to 24,000+).",
    # at least 30% of the templates medium or hard (WebGym's fact-count buckets)
    limits=AppLimits(min_hard_share=0.30),
)
