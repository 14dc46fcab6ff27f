"""The site's page types: the home page (the newest posts) and a blog post.

A post's author is its Wagtail owner (the user who wrote it); its date is the day it was
first published, as on the simweb side (Wagtail's own ``first_published_at`` is a
timestamp of the moment of publishing, kept as Wagtail sets it).
"""
from django.db import models
from wagtail.admin.panels import FieldPanel
from wagtail.models import Page
from wagtail.search import index


class HomePage(Page):
    """The site root: the newest published posts."""

    subpage_types = ["blog.BlogPage"]
    max_count = 1

    def get_context(self, request, *args, **kwargs):
        context = super().get_context(request, *args, **kwargs)
        context["posts"] = BlogPage.objects.live().child_of(self).order_by("-date", "-id")[:20]
        return context


class BlogPage(Page):
    """A post: date, category and text; the author is the page's owner."""

    date = models.DateField("Post date", null=True, blank=True)
    category = models.CharField(max_length=100, blank=True)
    body = models.TextField(blank=True)

    parent_page_types = ["blog.HomePage"]
    subpage_types: list = []

    search_fields = Page.search_fields + [index.SearchField("body")]
    content_panels = Page.content_panels + [FieldPanel("date"), FieldPanel("category"), FieldPanel("body")]

    @property
    def author_name(self) -> str:
        owner = self.owner
        return (owner.get_full_name() or owner.username) if owner else ""
