"""The public search: live posts matching every word of the query, 20 to a page."""
from django.core.paginator import EmptyPage, PageNotAnInteger, Paginator
from django.template.response import TemplateResponse

from .models import BlogPage

PER_PAGE = 20


def search(request):
    query = request.GET.get("q", "").strip()
    results = BlogPage.objects.none()
    if query:
        results = BlogPage.objects.live().search(query, operator="and")
    paginator = Paginator(results, PER_PAGE)
    try:
        page = paginator.page(request.GET.get("page", 1))
    except PageNotAnInteger:
        page = paginator.page(1)
    except EmptyPage:
        page = paginator.page(paginator.num_pages)
    return TemplateResponse(request, "blog/search.html", {"search_query": query, "results": page})
