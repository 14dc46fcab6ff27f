# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
# cython: cdivision=True, infer_types=False
"""The AX-tree walk of :mod:`simweb.axtree`, compiled, reading lexbor's C tree directly.

This is a line-by-line port of ``axtree._Builder``'s walk (``walk`` and everything it
reaches), of its ``resolve`` and of the line formatting and reference freezing. It fills
the same ``_Builder`` object (records, pending elements, forms, controls, labels,
selects), with three differences the compiled steps after it know about, none visible in
the Page: a pending element is a ``Pending`` (a typed class, not ``axtree._Pending``), a
plain element's pending entry is made final as soon as its line is (the 5-tuple that
``freeze_references`` makes of the others), and a text record is its str, its depth and
parent going to ``format_lines`` in a C array. The Python walk stays the reference: axtree
compares the two Pages on a probe document at import and falls back to Python on any
difference.

What it reads, and how selectolax reads the same thing (selectolax 1.0.x):

* nodes through ``lxb_dom_node_t``'s own fields (first_child / next / parent / type /
  local_name), the layout declared below;
* a tag's name as ``LexborNode.tag`` gives it: ``-text``/``-comment``/``-doctype``/
  ``-document`` by tag id, ``None`` for other non-elements, else the element's qualified
  name (cached per static tag id: lexbor's name for such an id is a constant);
* attributes as ``LexborNode.attributes``: qualified name -> value, ``None`` when the
  attribute has no value, later duplicates winning;
* text as ``text_content`` (a text node's data) and ``text()`` (every descendant text node
  in document order, the bytes joined, then decoded), always decoding with "replace".

lexbor's functions are taken from selectolax's own extension module (already loaded) with
dlsym: the lexbor headers are not installed, so they cannot be included.

``utf8`` gives the bytes lexbor parses (``str.encode("utf-8", "ignore")``, what selectolax
would make of the str), faster for a page held as two-byte characters.
"""

cimport cython
from libc.stdint cimport uintptr_t
from libc.stdlib cimport free, realloc
from libc.string cimport memcmp, memcpy
from libc.string cimport memset
from cpython.ref cimport PyObject
from cpython.unicode cimport PyUnicode_Contains, PyUnicode_DecodeASCII, PyUnicode_DecodeUTF8


cdef extern from "Python.h":
    bint PyUnicode_IS_ASCII(object o)
    void *PyUnicode_DATA(object o)
    Py_ssize_t PyUnicode_GET_LENGTH(object o)
    int PyUnicode_KIND(object o)
    Py_UCS4 PyUnicode_READ(int kind, const void *data, Py_ssize_t index) nogil
    void PyUnicode_WRITE(int kind, void *data, Py_ssize_t index, Py_UCS4 value) nogil
    bint Py_UNICODE_ISSPACE(Py_UCS4 ch) nogil
    bint Py_UNICODE_ISPRINTABLE(Py_UCS4 ch) nogil
    object PyUnicode_New(Py_ssize_t size, Py_UCS4 maxchar)


cdef extern from "<dlfcn.h>" nogil:
    void *dlopen(const char *filename, int flag)
    void *dlsym(void *handle, const char *symbol)
    int dlclose(void *handle)
    int RTLD_NOW
    int RTLD_NOLOAD


ctypedef unsigned char lxb_char_t

# Layouts as lexbor 2.x defines them (and selectolax's lexbor.pxd declares them).
cdef struct lexbor_str_t:
    lxb_char_t *data
    size_t length

cdef struct node_t:
    void *events            # lxb_dom_event_target_t
    uintptr_t local_name
    uintptr_t prefix
    uintptr_t ns
    void *owner_document
    node_t *next
    node_t *prev
    node_t *parent
    node_t *first_child
    node_t *last_child
    void *user
    int type                # lxb_dom_node_type_t

cdef struct chardata_t:     # lxb_dom_character_data_t
    node_t node
    lexbor_str_t data

cdef struct element_t:      # lxb_dom_element_t (leading fields)
    node_t node
    uintptr_t upper_name
    uintptr_t qualified_name

cdef struct attr_t:         # lxb_dom_attr_t (leading fields)
    node_t node
    uintptr_t upper_name
    uintptr_t qualified_name

ctypedef const lxb_char_t *(*name_f)(void *obj, size_t *length) noexcept nogil
ctypedef void *(*attr_step_f)(void *obj) noexcept nogil

cdef name_f el_qualified_name = NULL     # lxb_dom_element_qualified_name
cdef attr_step_f first_attribute = NULL  # lxb_dom_element_first_attribute_noi
cdef attr_step_f next_attribute = NULL   # lxb_dom_element_next_attribute_noi
cdef name_f attr_qualified_name = NULL   # lxb_dom_attr_qualified_name
cdef name_f attr_value = NULL            # lxb_dom_attr_value_noi

DEF NODE_ELEMENT = 1
DEF NODE_TEXT = 3
# lexbor's tag ids are measured at configure() (the numbers depend on the lexbor build):
cdef uintptr_t TAG_TEXT = 0        # LXB_TAG__TEXT
cdef uintptr_t TAG_DOCUMENT = 0    # LXB_TAG__DOCUMENT
cdef uintptr_t TAG_COMMENT = 0     # LXB_TAG__EM_COMMENT
cdef uintptr_t TAG_DOCTYPE = 0     # LXB_TAG__EM_DOCTYPE
cdef uintptr_t TAG_TITLE = 0       # LXB_TAG_TITLE
# Ids of lexbor's built-in tags are small numbers (about 200 of them); a tag the document
# defines gets a pointer to its data as id. Names are cached for ids below this bound only.
DEF TAG_LAST = 4096

# Tag codes: the tags the walk compares by name get fixed codes; every other tag named in
# axtree's tables gets one from configure(); 0 is any other element.
DEF C_OTHER = 0
DEF C_TEXT = 1
DEF C_SPECIAL = 2       # -comment, -doctype, -document, and non-elements (tag None)
DEF C_A = 3
DEF C_INPUT = 4
DEF C_DIALOG = 5
DEF C_SUMMARY = 6
DEF C_DETAILS = 7
DEF C_FORM = 8
DEF C_NAV = 9
DEF C_MAIN = 10
DEF C_ARTICLE = 11
DEF C_ASIDE = 12
DEF C_SECTION = 13
DEF C_FIELDSET = 14
DEF C_IMG = 15
DEF C_SVG = 16
DEF C_LABEL = 17
DEF C_TABLE = 18
DEF C_LEGEND = 19
DEF C_CAPTION = 20
DEF C_OPTION = 21
DEF C_OPTGROUP = 22
DEF C_BUTTON = 23
DEF C_SELECT = 24
DEF C_TEXTAREA = 25
DEF C_TH = 26
DEF C_HEADER = 27
DEF C_FOOTER = 28
DEF C_DIV = 29
DEF C_BR = 30
DEF C_FIRST_FREE = 31
DEF MAX_CODES = 512

_FIXED = ("a input dialog summary details form nav main article aside section fieldset img "
          "svg label table legend caption option optgroup button select textarea th header "
          "footer div br").split()

# Tag flags
DEF F_SKIP = 1
DEF F_OPAQUE = 2
DEF F_INLINE = 4
DEF F_PLAIN = 8
DEF F_CONTROL = 16
DEF F_CONTEXT = 32
DEF F_FAST_NFC = 64     # the fast role names from content
DEF F_LIVE = 128        # the tag's own role is a live region's (output: status)

# Attribute-name bits, set while an element's attributes are read
DEF B_SLOW = 1
DEF B_SPECIAL = 2
DEF B_HIDING = 4
DEF B_STATE = 8
DEF B_BUTTON_NAME = 16
DEF B_BID = 32
DEF B_HREF = 64

# One bit per attribute name that the walk asks about (bits 8 and up, beside the B_* bits
# of the same mask): `name in attrs` is `mask & A_NAME`, and a lookup of an absent name is
# skipped. Set by configure() from ATTR_NAMES (a name's bit is 1 << (8 + its index)).
ctypedef unsigned long long mask_t
ATTR_NAMES = ("role", "aria-label", "aria-labelledby", "title", "form", "name", "disabled", "type",
              "value", "checked", "multiple", "required", "aria-selected", "open", "for", "id",
              "method", "action", "alt", "aria-live")
cdef mask_t A_ROLE = (<mask_t> 1) << 8
cdef mask_t A_ARIA_LABEL = (<mask_t> 1) << 9
cdef mask_t A_ARIA_LABELLEDBY = (<mask_t> 1) << 10
cdef mask_t A_TITLE = (<mask_t> 1) << 11
cdef mask_t A_FORM = (<mask_t> 1) << 12
cdef mask_t A_NAME = (<mask_t> 1) << 13
cdef mask_t A_DISABLED = (<mask_t> 1) << 14
cdef mask_t A_TYPE = (<mask_t> 1) << 15
cdef mask_t A_VALUE = (<mask_t> 1) << 16
cdef mask_t A_CHECKED = (<mask_t> 1) << 17
cdef mask_t A_MULTIPLE = (<mask_t> 1) << 18
cdef mask_t A_REQUIRED = (<mask_t> 1) << 19
cdef mask_t A_ARIA_SELECTED = (<mask_t> 1) << 20
cdef mask_t A_OPEN = (<mask_t> 1) << 21
cdef mask_t A_FOR = (<mask_t> 1) << 22
cdef mask_t A_ID = (<mask_t> 1) << 23
cdef mask_t A_METHOD = (<mask_t> 1) << 24
cdef mask_t A_ACTION = (<mask_t> 1) << 25
cdef mask_t A_ALT = (<mask_t> 1) << 26
cdef mask_t A_ARIA_LIVE = (<mask_t> 1) << 27

# Attribute names by name id, per walk: an attribute's qualified name is lexbor's name for
# its id (a built-in id, or one this document defined), so within one document the id
# says the name. Slots hold the id, the name's B_* bits and the decoded name (kept alive
# by the cache's list). One cache per walk in progress (see take_cache).
cdef struct aslot:
    uintptr_t key
    mask_t bits
    PyObject *name

DEF ACACHE = 1024
DEF ACACHE_HALF = 512

cdef int tag_flags[MAX_CODES]
cdef int static_code[TAG_LAST]      # static tag id -> code (-1: not seen yet)
cdef list static_name = [None] * TAG_LAST
cdef list fast_roles = [None] * MAX_CODES
cdef list tag_roles = [None] * MAX_CODES
cdef dict code_of = {}
cdef dict attr_bits = {}

# Tables and classes of simweb.axtree (set by configure()).
cdef object Element = None
cdef object attr_str = None
cdef object DuplicateBidError = None
cdef frozenset NAME_FROM_CONTENT = frozenset()
cdef frozenset CHECKABLE_ROLES = frozenset()
cdef dict LIVE_ROLES = {}
cdef frozenset ARIA_ROLES = frozenset()
cdef dict TEXT_INPUTS = {}
cdef frozenset BUTTON_INPUTS = frozenset()
cdef frozenset CONTROL_NAMES = frozenset()
cdef dict DEFAULT_BUTTON_LABEL = {}

cdef bint configured = False


def load(str lexbor_path) -> bool:
    """Find lexbor's functions in selectolax's (already loaded) extension module."""
    global el_qualified_name, first_attribute, next_attribute, attr_qualified_name, attr_value
    cdef bytes path = lexbor_path.encode()
    cdef void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD)
    if h == NULL:
        return False
    el_qualified_name = <name_f> dlsym(h, b"lxb_dom_element_qualified_name")
    first_attribute = <attr_step_f> dlsym(h, b"lxb_dom_element_first_attribute_noi")
    next_attribute = <attr_step_f> dlsym(h, b"lxb_dom_element_next_attribute_noi")
    attr_qualified_name = <name_f> dlsym(h, b"lxb_dom_attr_qualified_name")
    attr_value = <name_f> dlsym(h, b"lxb_dom_attr_value_noi")
    # The handle is not closed: the module stays loaded as long as selectolax is.
    return (el_qualified_name != NULL and first_attribute != NULL and next_attribute != NULL
            and attr_qualified_name != NULL and attr_value != NULL)


def configure(ns: dict, tag_ids: dict) -> None:
    """Take axtree's tables (one source of truth) and build the per-tag-code ones.

    `tag_ids` maps "-text", "-comment", "-doctype", "-document" and "title" to lexbor's
    tag ids (``LexborNode.tag_id`` of such nodes)."""
    global Element, attr_str, DuplicateBidError, NAME_FROM_CONTENT, CHECKABLE_ROLES, ARIA_ROLES, LIVE_ROLES
    global TEXT_INPUTS, BUTTON_INPUTS, CONTROL_NAMES, DEFAULT_BUTTON_LABEL, configured
    global TAG_TEXT, TAG_DOCUMENT, TAG_COMMENT, TAG_DOCTYPE, TAG_TITLE
    cdef int i, code
    TAG_TEXT = tag_ids["-text"]
    TAG_DOCUMENT = tag_ids["-document"]
    TAG_COMMENT = tag_ids["-comment"]
    TAG_DOCTYPE = tag_ids["-doctype"]
    TAG_TITLE = tag_ids["title"]
    if TAG_TITLE >= TAG_LAST:
        raise ValueError("unexpected lexbor tag ids")
    Element = ns["Element"]
    attr_str = ns["_attr_str"]
    DuplicateBidError = ns["DuplicateBidError"]
    NAME_FROM_CONTENT = ns["_NAME_FROM_CONTENT"]
    CHECKABLE_ROLES = ns["_CHECKABLE_ROLES"]
    LIVE_ROLES = ns["_LIVE_ROLES"]
    ARIA_ROLES = ns["_ARIA_ROLES"]
    TEXT_INPUTS = ns["_TEXT_INPUTS"]
    BUTTON_INPUTS = ns["_BUTTON_INPUTS"]
    CONTROL_NAMES = ns["_CONTROL_TAGS"]
    DEFAULT_BUTTON_LABEL = ns["_DEFAULT_BUTTON_LABEL"]
    code_of.clear()
    for i in range(MAX_CODES):
        tag_flags[i] = 0
        fast_roles[i] = None
        tag_roles[i] = None
    for i in range(TAG_LAST):
        static_code[i] = -1
        static_name[i] = None
    for i, name in enumerate(_FIXED):
        code_of[name] = C_A + i
    named: set = set()
    for key in ("_SKIP_TAGS", "_OPAQUE_TAGS", "_INLINE_TAGS", "_TAG_ROLES", "_PLAIN_GENERIC",
                "_CONTROL_TAGS", "_CONTEXT_ROLE_TAGS", "_FAST_ROLES"):
        named.update(ns[key])
    code = C_FIRST_FREE
    for name in sorted(named):
        if name not in code_of and not name.startswith("-"):
            if code >= MAX_CODES:
                raise ValueError("too many tag names")
            code_of[name] = code
            code += 1
    tag_flags[C_SPECIAL] = F_SKIP
    tag_flags[C_TEXT] = F_SKIP   # walk() tests C_TEXT first; the other walks skip it
    for name, code in code_of.items():
        f = 0
        if name in ns["_SKIP_TAGS"]:
            f |= F_SKIP
        if name in ns["_OPAQUE_TAGS"]:
            f |= F_OPAQUE
        if name in ns["_INLINE_TAGS"]:
            f |= F_INLINE
        if name in ns["_PLAIN_GENERIC"]:
            f |= F_PLAIN
        if name in ns["_CONTROL_TAGS"]:
            f |= F_CONTROL
        if name in ns["_CONTEXT_ROLE_TAGS"]:
            f |= F_CONTEXT
        fr = ns["_FAST_ROLES"].get(name)
        if fr is not None and fr in NAME_FROM_CONTENT:
            f |= F_FAST_NFC
        if ns["_TAG_ROLES"].get(name) in LIVE_ROLES:
            f |= F_LIVE
        tag_flags[code] = f
        fast_roles[code] = fr
        tag_roles[code] = ns["_TAG_ROLES"].get(name)
    attr_bits.clear()
    attr_bits["bid"] = B_BID
    attr_bits["href"] = B_HREF
    for key, bit in (("_SLOW_ATTRS", B_SLOW), ("_SPECIAL_ATTRS", B_SPECIAL), ("_HIDING_ATTRS", B_HIDING),
                     ("_STATE_ATTRS", B_STATE), ("_BUTTON_NAME_ATTRS", B_BUTTON_NAME)):
        for name in ns[key]:
            attr_bits[name] = attr_bits.get(name, 0) | bit
    for i, name in enumerate(ATTR_NAMES):
        attr_bits[name] = attr_bits.get(name, 0) | (1 << (8 + i))
    configured = True


# --------------------------------------------------------------------------
# Reading the tree
# --------------------------------------------------------------------------

cdef inline str decode(const lxb_char_t *data, size_t length):
    return PyUnicode_DecodeUTF8(<const char *> data, length, "replace")


cdef inline bint ws_only(node_t *n) noexcept:
    """selectolax's is_empty_text_node: a text node of HTML ASCII whitespace only."""
    cdef chardata_t *cd = <chardata_t *> n
    cdef const lxb_char_t *p = cd.data.data
    cdef const lxb_char_t *end
    cdef lxb_char_t c
    if p == NULL or cd.data.length == 0:
        return True
    end = p + cd.data.length
    while p < end:
        c = p[0]
        if c != 32 and c != 9 and c != 10 and c != 12 and c != 13:
            return False
        p += 1
    return True


cdef object tag_of(node_t *n, int *code):
    """LexborNode.tag, and the node's tag code."""
    cdef uintptr_t ln = n.local_name
    cdef uintptr_t key
    cdef size_t length = 0
    cdef const lxb_char_t *s
    cdef int c
    if ln == TAG_TEXT:
        code[0] = C_TEXT
        return "-text"
    if ln == TAG_COMMENT or ln == TAG_DOCTYPE or ln == TAG_DOCUMENT:
        code[0] = C_SPECIAL
        return "-comment" if ln == TAG_COMMENT else ("-doctype" if ln == TAG_DOCTYPE else "-document")
    if n.type != NODE_ELEMENT:
        code[0] = C_SPECIAL
        return None
    key = (<element_t *> n).qualified_name
    if key == 0:
        key = ln
    if key < TAG_LAST:
        c = static_code[key]
        if c >= 0:
            code[0] = c
            return static_name[key]
    s = el_qualified_name(n, &length)
    if s == NULL:
        code[0] = C_SPECIAL
        return None
    name = decode(s, length)
    c = code_of.get(name, C_OTHER)
    if key < TAG_LAST:
        static_name[key] = name
        static_code[key] = c
    code[0] = c
    return name


cdef int code_of_node(node_t *n):
    cdef int c = 0
    tag_of(n, &c)
    return c


cdef struct vslot:
    size_t length
    PyObject *value

DEF VCACHE = 256
DEF VCACHE_MAX_LEN = 16


cdef class AttrCache:
    """Attribute names seen in one document (open addressing on the name id), and short
    ASCII attribute values (type="submit", method="post", class="inline"... repeat on a
    page: one str each, shared by every dict that holds it; direct-mapped on a hash of
    the bytes). `names` keeps every cached str alive for as long as a slot points at it."""
    cdef aslot slots[ACACHE]
    cdef size_t used_slots[ACACHE_HALF]   # the slots in use, to clear only those
    cdef int used
    cdef vslot values[VCACHE]
    cdef list names

    def __cinit__(self):
        self.names = []
        memset(self.values, 0, sizeof(self.values))

    cdef void clear(self) noexcept:
        cdef int i
        for i in range(self.used):
            self.slots[self.used_slots[i]].key = 0
        self.used = 0
        memset(self.values, 0, sizeof(self.values))
        self.names.clear()


cdef inline object value_str(AttrCache ac, const lxb_char_t *s, size_t n):
    """decode(s, n) for an attribute value, the cached str when it is a short ASCII one."""
    cdef size_t i
    cdef size_t h = 2166136261
    cdef vslot *v
    cdef lxb_char_t c
    if n > VCACHE_MAX_LEN:
        return decode(s, n)
    for i in range(n):
        c = s[i]
        if c >= 128:
            return decode(s, n)
        h = (h ^ c) * 16777619
    v = &ac.values[(h ^ (h >> 11)) & (VCACHE - 1)]
    if v.value != NULL and v.length == n and memcmp(PyUnicode_DATA(<object> v.value), s, n) == 0:
        return <object> v.value
    val = PyUnicode_DecodeASCII(<const char *> s, n, NULL)   # what decode() gives for ASCII
    ac.names.append(val)
    v.length = n
    v.value = <PyObject *> val
    return val


cdef AttrCache spare_cache = None


cdef AttrCache take_cache():
    """A cleared cache: the spare one, or a new one when another walk (another thread)
    holds it."""
    global spare_cache
    cdef AttrCache c = spare_cache
    if c is None:
        return AttrCache()
    spare_cache = None
    c.clear()
    return c


cdef aslot *attr_slot(AttrCache ac, void *a) except NULL:
    """The cache slot of attribute `a`'s name (filled on first sight)."""
    cdef attr_t *at = <attr_t *> a
    cdef uintptr_t key = at.qualified_name
    cdef size_t h
    cdef aslot *slot
    cdef size_t length = 0
    cdef const lxb_char_t *s
    if key == 0:
        key = at.node.local_name
    h = ((key >> 4) ^ (key >> 12) ^ key) & (ACACHE - 1)
    while True:
        slot = &ac.slots[h]
        if slot.key == key and key != 0:
            return slot
        if slot.key == 0:
            break
        h = (h + 1) & (ACACHE - 1)
    if ac.used >= ACACHE_HALF:     # a document with very many attribute names
        ac.clear()
        return attr_slot(ac, a)
    s = attr_qualified_name(a, &length)
    name = decode(s, length) if s != NULL else ""
    ac.names.append(name)
    v = attr_bits.get(name)
    slot.bits = 0 if v is None else <mask_t> v
    slot.name = <PyObject *> name
    if key != 0:
        slot.key = key
        ac.used_slots[ac.used] = h
        ac.used += 1
    return slot


cdef mask_t attr_bits_of(AttrCache ac, node_t *n) except? 0:
    """The mask of the names of `n`'s attributes (without reading their values)."""
    cdef void *a
    cdef mask_t b = 0
    if n.type != NODE_ELEMENT:
        return 0
    a = first_attribute(n)
    while a != NULL:
        b |= attr_slot(ac, a).bits
        a = next_attribute(a)
    return b


cdef dict attrs_of(AttrCache ac, node_t *n, mask_t *bits):
    """LexborNode.attributes, and the mask of the attribute names present."""
    cdef dict d = {}
    cdef void *a
    cdef size_t vlength = 0
    cdef const lxb_char_t *s
    cdef aslot *slot
    cdef mask_t b = 0
    if n.type != NODE_ELEMENT:
        bits[0] = 0
        return d
    a = first_attribute(n)
    while a != NULL:
        slot = attr_slot(ac, a)
        b |= slot.bits
        s = attr_value(a, &vlength)
        d[<object> slot.name] = value_str(ac, s, vlength) if s != NULL else None
        a = next_attribute(a)
    bits[0] = b
    return d


cdef inline dict attrs_only(AttrCache ac, node_t *n):
    cdef mask_t b = 0
    return attrs_of(ac, n, &b)


cdef inline bint py_space(lxb_char_t c) noexcept:
    """str.split()'s whitespace, for an ASCII byte (\\t \\n \\v \\f \\r, \\x1c-\\x1f, space)."""
    return c == 32 or (9 <= c <= 13) or (28 <= c <= 31)


cdef bint ascii_collapsed(const lxb_char_t *p, size_t n) noexcept:
    """Whether ASCII bytes are collapsed already: words separated by single spaces."""
    cdef size_t i
    cdef lxb_char_t c
    cdef bint space = True      # no leading space
    for i in range(n):
        c = p[i]
        if c == 32:
            if space:
                return False
            space = True
        elif py_space(c):
            return False
        else:
            space = False
    return not space or n == 0  # no trailing space


cdef object collapse_ascii(const lxb_char_t *p, size_t n):
    """" ".join(text.split()) computed on the bytes of an ASCII text; None when the text is
    not ASCII (then the caller decodes it and collapses in Python, where Unicode spaces
    are spaces too)."""
    cdef char small[512]
    cdef char *out = small
    cdef size_t i, k = 0
    cdef lxb_char_t c
    cdef bint gap = False
    if p == NULL or n == 0:
        return ""
    for i in range(n):
        if p[i] >= 128:
            return None
    if n > sizeof(small):
        out = <char *> realloc(NULL, n)
        if out == NULL:
            raise MemoryError()
    try:
        for i in range(n):
            c = p[i]
            if py_space(c):
                gap = k > 0
            else:
                if gap:
                    out[k] = 32
                    k += 1
                    gap = False
                out[k] = <char> c
                k += 1
        if k == 0:
            return ""
        return PyUnicode_DecodeASCII(out, k, NULL)
    finally:
        if out != small:
            free(out)


cdef inline str text_content(node_t *n):
    """A text node's text ('' where selectolax's text_content gives None)."""
    cdef chardata_t *cd
    if n.type != NODE_TEXT:
        return ""
    cd = <chardata_t *> n
    if cd.data.data == NULL:
        return ""
    return decode(cd.data.data, cd.data.length)


cdef str node_text(node_t *root):
    """LexborNode.text(): the descendants' text nodes, in document order, joined."""
    cdef node_t *n = root.first_child
    cdef chardata_t *cd
    cdef char *buf = NULL
    cdef char *nbuf
    cdef size_t size = 0
    cdef size_t cap = 0
    cdef size_t need
    cdef str out
    # Pass 1 is free for the common case of a single text child.
    if n != NULL and n.next == NULL and n.first_child == NULL:
        if n.local_name == TAG_TEXT:
            cd = <chardata_t *> n
            if cd.data.data != NULL and cd.data.length:
                return decode(cd.data.data, cd.data.length)
        return ""
    try:
        while n != NULL:
            if n.local_name == TAG_TEXT:
                cd = <chardata_t *> n
                if cd.data.data != NULL and cd.data.length:
                    need = size + cd.data.length
                    if need > cap:
                        cap = need * 2 + 64
                        nbuf = <char *> realloc(buf, cap)
                        if nbuf == NULL:
                            raise MemoryError()
                        buf = nbuf
                    memcpy(buf + size, cd.data.data, cd.data.length)
                    size = need
            if n.first_child != NULL:
                n = n.first_child
            else:
                while n != root and n.next == NULL:
                    n = n.parent
                if n == root:
                    break
                n = n.next
        if size == 0:
            return ""
        out = PyUnicode_DecodeUTF8(buf, size, "replace")
        return out
    finally:
        free(buf)


cdef node_t *first_descendant(node_t *root, uintptr_t tag_id) noexcept:
    """The first element below `root` (document order) with this tag id (css_first)."""
    cdef node_t *n = root.first_child
    while n != NULL:
        if n.type == NODE_ELEMENT and n.local_name == tag_id:
            return n
        if n.first_child != NULL:
            n = n.first_child
        else:
            while n != root and n.next == NULL:
                n = n.parent
            if n == root:
                break
            n = n.next
    return NULL


# --------------------------------------------------------------------------
# Attribute helpers (ports of axtree's)
# --------------------------------------------------------------------------

cdef str collapse(str text):
    """" ".join(text.split()); ASCII text is collapsed on its bytes."""
    cdef object s
    if PyUnicode_IS_ASCII(text):
        if ascii_collapsed(<const lxb_char_t *> PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text)):
            return text
        s = collapse_ascii(<const lxb_char_t *> PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text))
        if s is not None:
            return s
    return collapse_unicode(text)


cdef str collapse_unicode(str text):
    """" ".join(text.split()) for any str, in two passes over its code points and one
    allocation (split() makes a string per word and a list). Whitespace is str.split()'s,
    Py_UNICODE_ISSPACE; the result is sized to its own widest character, as a str must be."""
    cdef int kind = PyUnicode_KIND(text)
    cdef const void *data = PyUnicode_DATA(text)
    cdef Py_ssize_t i, n = PyUnicode_GET_LENGTH(text)
    cdef Py_ssize_t k = 0
    cdef Py_UCS4 ch, maxc = 0
    cdef bint gap = False
    cdef bint changed = False
    cdef int okind
    cdef void *odata
    for i in range(n):
        ch = PyUnicode_READ(kind, data, i)
        if Py_UNICODE_ISSPACE(ch):
            if gap or k == 0 or ch != 32:
                changed = True   # dropped, or replaced by a plain space
            gap = k > 0
        else:
            if gap:
                k += 1
                gap = False
            k += 1
            if ch > maxc:
                maxc = ch
    if gap:
        changed = True   # a trailing run
    if not changed:
        return text
    if k == 0:
        return ""
    out = PyUnicode_New(k, maxc)   # an inserted space (32) never widens: below 128 is ASCII
    okind = PyUnicode_KIND(out)
    odata = PyUnicode_DATA(out)
    k = 0
    gap = False
    for i in range(n):
        ch = PyUnicode_READ(kind, data, i)
        if Py_UNICODE_ISSPACE(ch):
            gap = k > 0
        else:
            if gap:
                PyUnicode_WRITE(okind, odata, k, 32)
                k += 1
                gap = False
            PyUnicode_WRITE(okind, odata, k, ch)
            k += 1
    return out


cdef str lowered(str s):
    """s.strip().lower(), without the two new strings when `s` is a lowercase ASCII token
    already (as attribute values such as type="submit" or method="post" mostly are)."""
    cdef const lxb_char_t *p
    cdef Py_ssize_t i, n
    cdef lxb_char_t c
    if PyUnicode_IS_ASCII(s):
        p = <const lxb_char_t *> PyUnicode_DATA(s)
        n = PyUnicode_GET_LENGTH(s)
        if n == 0:
            return s
        if not py_space(p[0]) and not py_space(p[n - 1]):
            for i in range(n):
                c = p[i]
                if 65 <= c <= 90:
                    break
            else:
                return s
    return s.strip().lower()


cdef bint is_hidden(int code, dict attrs):
    if "hidden" in attrs:
        return True
    ah = attrs.get("aria-hidden")
    if ah is not None and lowered(ah) == "true":
        return True
    style = attrs.get("style")
    if style:
        s = style.replace(" ", "").lower()
        if "display:none" in s or "visibility:hidden" in s:
            return True
    if code == C_DIALOG and "open" not in attrs:
        return True
    if code == C_INPUT:
        t = attrs.get("type")
        if t is not None and lowered(t) == "hidden":
            return True
    return False


cdef object explicit_role(dict attrs):
    raw = attrs.get("role")
    if not raw:
        return None
    for token in raw.split():
        token = lowered(token)   # split() tokens: strip() changes nothing
        if token in ARIA_ROLES:
            if token == "presentation" or token == "none":
                return "generic"
            return "image" if token == "img" else token
    return None


cdef inline object href_of(dict attrs):
    """axtree._href for an <a>."""
    if "href" not in attrs:
        return None
    return attrs["href"] or ""


cdef str tristate(v):
    v = lowered(v or "")
    return v if v in ("true", "false", "mixed") else "false"


cdef tuple aria_props(dict attrs):
    pre = ", disabled=True" if attrs.get("aria-disabled") == "true" else ""
    post1 = ""
    hp = attrs.get("aria-haspopup")
    if hp:
        hp = lowered(hp)
        if hp and hp != "false":
            post1 = ", hasPopup='menu'" if hp == "true" else ", hasPopup=" + quoted(hp)
    if attrs.get("aria-required") == "true":
        post1 += ", required"
    post2 = ""
    ex = attrs.get("aria-expanded")
    if ex == "true" or ex == "false":
        post2 = ", expanded=True" if ex == "true" else ", expanded=False"
    pr = attrs.get("aria-pressed")
    if pr == "true" or pr == "false" or pr == "mixed":
        post2 += ", pressed='true'" if pr == "true" else (", pressed='false'" if pr == "false" else ", pressed='mixed'")
    return pre, post1, post2


cdef int select_size(dict attrs):
    if not attrs:
        return 0
    try:
        return int(attrs.get("size") or 0)
    except ValueError:
        return 0


cdef inline list new_rec(int kind, int depth, int parent, bid, role):
    return [kind, depth, parent, bid, role, "", None, "", "", "", "", None, None, -1]


# --------------------------------------------------------------------------
# The walk
# --------------------------------------------------------------------------

@cython.no_gc
@cython.freelist(64)
cdef class Pending:
    """axtree._Pending, compiled: typed fields instead of an instance dict (the walk makes
    one per control and per bid that has no line of its own, and sets a dozen fields on
    each). Not tracked by the garbage collector: it refers to strings, dicts of strings,
    line records and its Element, never back to anything that refers to it, so it cannot
    be part of a cycle; a cached Page holds dozens of them."""
    cdef public object bid
    cdef public object tag
    cdef public object role
    cdef public object attrs
    cdef public bint hidden
    cdef public object name
    cdef public object form
    cdef public object form_attr
    cdef public object input_type
    cdef public object field_name
    cdef public object value
    cdef public bint checked
    cdef public object options
    cdef public object href
    cdef public bint disabled
    cdef public bint multiple
    cdef public object rec
    cdef public object label
    cdef public bint labelable
    cdef public object content
    cdef public object element

    def build(self):
        """axtree._Pending.build."""
        el = self.element
        if el is None:
            el = self.element = Element(
                self.bid, self.tag, self.role, self.name, attr_str(self.attrs),
                self.form, self.input_type, self.field_name, self.value, self.checked,
                self.options, self.href, self.disabled, self.multiple, self.hidden,
            )
        return el


cdef inline Pending new_pending(bid, str tag, role, dict attrs, bint hidden):
    """_Pending(bid, tag, role, attrs, hidden), with _Pending's class-level defaults."""
    cdef Pending p = Pending.__new__(Pending)
    p.bid = bid
    p.tag = tag
    p.role = role
    p.attrs = attrs
    p.hidden = hidden
    p.name = ""
    p.options = ()
    return p


@cython.freelist(16)
cdef class Ctx:
    """axtree._Ctx. Made by new_ctx(), not called: a call parses its arguments."""
    cdef object form
    cdef object label
    cdef bint in_section
    cdef bint fs_disabled

    cdef Ctx with_form(self, form):
        return new_ctx(form, self.label, self.in_section, self.fs_disabled)

    cdef Ctx with_label(self, label):
        return new_ctx(self.form, label, self.in_section, self.fs_disabled)

    cdef Ctx with_section(self):
        return self if self.in_section else new_ctx(self.form, self.label, True, self.fs_disabled)

    cdef Ctx with_fs_disabled(self):
        return new_ctx(self.form, self.label, self.in_section, True)


cdef inline Ctx new_ctx(form, label, bint in_section, bint fs_disabled):
    cdef Ctx c = Ctx.__new__(Ctx)
    c.form = form
    c.label = label
    c.in_section = in_section
    c.fs_disabled = fs_disabled
    return c


cdef class Walker:
    """Fills one axtree._Builder's walk results (its lists and dicts, in place)."""
    cdef list recs
    cdef dict pending
    cdef list controls
    cdef list forms
    cdef dict form_ids
    cdef dict label_for
    cdef list need_names
    cdef list selects
    cdef AttrCache ac
    cdef int *texts          # (depth, parent) of each text record, in record order
    cdef Py_ssize_t ntexts
    cdef Py_ssize_t texts_cap

    def __cinit__(self, b):
        self.texts = NULL
        self.ntexts = 0
        self.texts_cap = 0
        self.recs = b.recs
        self.pending = b.pending
        self.controls = b.controls
        self.forms = b.forms
        self.form_ids = b.form_ids
        self.label_for = b.label_for
        self.need_names = b.need_names
        self.selects = b.selects

    def __dealloc__(self):
        free(self.texts)

    cdef int add_text(self, str s, int depth, int parent) except -1:
        """A StaticText record: the text itself goes in `recs` (a str, no tuple), its depth
        and parent in `texts` (format_lines reads both)."""
        cdef int *grown
        if self.ntexts == self.texts_cap:
            self.texts_cap = self.texts_cap * 2 + 64
            grown = <int *> realloc(self.texts, self.texts_cap * 2 * sizeof(int))
            if grown == NULL:
                raise MemoryError()
            self.texts = grown
        self.texts[2 * self.ntexts] = depth
        self.texts[2 * self.ntexts + 1] = parent
        self.ntexts += 1
        self.recs.append(s)
        return 0

    # Registration ----------------------------------------------------------------

    cdef Pending register(self, bid, str tag, role, dict attrs, bint hidden):
        cdef Pending p = new_pending(bid, tag, role, attrs, hidden)
        if bid is not None:
            if bid in self.pending:
                self.duplicate(bid, tag)
            self.pending[bid] = p
        return p

    cdef int duplicate(self, bid, str tag) except -1:
        first = self.pending[bid]
        # a claimed bid (the tag), an element's tuple (tag first) or a Pending
        first_tag = first if type(first) is str else (first[0] if type(first) is tuple else first.tag)
        raise DuplicateBidError(f"duplicate bid {bid!r} (on <{first_tag}> and on <{tag}>)")

    cdef int open_form(self, bid, dict attrs, mask_t bits) except -1:
        cdef int idx = len(self.forms)
        method = lowered(attrs["method"] or "get") if bits & A_METHOD else "get"
        self.forms.append((bid, (attrs["action"] or "") if bits & A_ACTION else "", "post" if method == "post" else "get"))
        fid = attrs["id"] if bits & A_ID else None
        if fid and fid not in self.form_ids:
            self.form_ids[fid] = idx
        return idx

    # Visible content ---------------------------------------------------------------

    cdef int walk(self, node_t *node, int depth, int parent, list acc, Ctx ctx) except -1:
        cdef node_t *child = node.first_child
        cdef node_t *nxt
        cdef bint skip_empty = acc is None
        cdef int code = 0
        cdef mask_t bits = 0
        cdef int f
        cdef dict attrs
        cdef str text
        while child != NULL:
            nxt = child.next
            if child.type == NODE_TEXT and skip_empty and ws_only(child):
                child = nxt
                continue
            tag = tag_of(child, &code)
            f = tag_flags[code]
            if code == C_TEXT:
                if acc is not None:
                    text = text_content(child)
                    acc.append(text)
                    s = collapse(text)
                elif child.type == NODE_TEXT:
                    s = collapse_ascii((<chardata_t *> child).data.data, (<chardata_t *> child).data.length)
                    if s is None:
                        s = collapse(text_content(child))
                else:
                    s = ""
                if s:
                    self.add_text(s, depth, parent)
            elif not (f & F_SKIP):
                # Attribute names first: most elements need no attribute dict at all.
                bits = attr_bits_of(self.ac, child)
                fast_role = fast_roles[code]
                if fast_role is not None and not (bits & B_SLOW) and (code != C_A or bits & B_HREF):
                    attrs = attrs_of(self.ac, child, &bits) if (bits & B_BID) or code == C_A else None
                    self.visit_simple(child, tag, code, attrs, fast_role, depth, parent, acc, ctx)
                elif (f & F_PLAIN) and not (bits & B_SPECIAL):
                    if acc is None:
                        self.walk(child, depth, parent, None, ctx)
                    elif f & F_INLINE:
                        self.walk(child, depth, parent, acc, ctx)
                    else:
                        acc.append(" ")
                        self.walk(child, depth, parent, acc, ctx)
                        acc.append(" ")
                else:
                    attrs = attrs_of(self.ac, child, &bits)
                    self.visit(child, tag, code, attrs, bits, depth, parent, acc, ctx)
            elif code == C_BR and acc is not None:
                acc.append(" ")
            child = nxt
        return 0

    cdef int visit_simple(self, node_t *node, str tag, int code, dict attrs, str role, int depth,
                          int parent, list acc, Ctx ctx) except -1:
        cdef list recs = self.recs
        cdef int idx = len(recs)
        cdef list mine
        cdef bint block
        bid = attrs.get("bid") if attrs else None
        rec = [1, depth, parent, bid, role, "", None, "", "", "", "", None, None, -1]
        recs.append(rec)
        if bid is not None:
            if bid in self.pending:
                self.duplicate(bid, tag)
            self.pending[bid] = tag   # claimed; the entry is made once the name is known
        block = code != C_A
        if tag_flags[code] & F_FAST_NFC:
            if not block:
                rec[10] = ", url=" + quoted_obj(href_of(attrs))
            mine = []
            self.walk(node, depth + 1, idx, mine, ctx)
            rec[5] = collapse("".join(mine))
            if acc is not None:
                if block:
                    acc.append(" ")
                    acc.extend(mine)
                    acc.append(" ")
                else:
                    acc.extend(mine)
        elif acc is not None:
            acc.append(" ")
            self.walk(node, depth + 1, idx, acc, ctx)
            acc.append(" ")
        else:
            self.walk(node, depth + 1, idx, None, ctx)
        if bid is not None:
            # What freeze_references() would make of (tag, attrs, rec): nothing can change
            # this line's name or properties any more.
            self.pending[bid] = (tag, attrs, role, rec[5], False)
        return 0

    cdef int visit(self, node_t *node, str tag, int code, dict attrs, mask_t bits, int depth, int parent,
                   list acc, Ctx ctx) except -1:
        cdef int f = tag_flags[code]
        cdef int expanded = -1
        cdef int idx
        cdef list recs
        cdef list rec
        cdef list mine
        cdef list child_acc
        cdef Ctx c
        cdef node_t *par
        cdef node_t *ch
        cdef node_t *t
        cdef bint block
        cdef int want
        cdef int ccode = 0
        if f & F_OPAQUE:
            self.hidden_element(node, tag, code, attrs, bits, attrs["bid"] if bits & B_BID else None, ctx)
            return 0
        if attrs:
            bid = attrs["bid"] if bits & B_BID else None
            if (code == C_INPUT or code == C_DIALOG or (bits & B_HIDING)) and is_hidden(code, attrs):
                self.hidden_element(node, tag, code, attrs, bits, bid, ctx)
                return 0
        else:
            bid = None
            if code == C_DIALOG:
                self.hidden_element(node, tag, code, attrs, bits, bid, ctx)
                return 0

        if f & F_CONTROL:
            self.visit_control(node, tag, code, attrs, bits, bid, depth, parent, acc, ctx)
            return 0

        role = explicit_role(attrs) if bits & A_ROLE else None
        if role is None:
            role = tag_roles[code]
            if role is None and (f & F_CONTEXT):
                role = self.implicit_role(code, attrs, ctx)
        elif role == "generic":
            role = None
        if code == C_SUMMARY:
            par = node.parent
            if par != NULL and code_of_node(par) == C_DETAILS:
                expanded = "open" in attrs_only(self.ac, par)
                role = role or "DisclosureTriangle"

        if role is None and bits & A_ARIA_LIVE and attrs["aria-live"] and live_props("generic", attrs):
            role = "generic"   # a live region: Chromium gives it properties, so BrowserGym a line
        if role is None:
            self.visit_generic(node, tag, code, attrs, bits, bid, depth, parent, acc, ctx)
            return 0

        # An element with a line of its own.
        recs = self.recs
        idx = len(recs)
        rec = [1, depth, parent, bid, role, "", None, "", "", "", "", None, None, -1]
        recs.append(rec)
        if bid is not None:
            if bid in self.pending:
                self.duplicate(bid, tag)
            self.pending[bid] = tag   # claimed; the entry is made once the name is known
        aria = attrs["aria-label"] if bits & A_ARIA_LABEL else None
        if aria is not None:
            aria = collapse(aria)

        c = ctx
        url = ""
        post2 = ""
        if attrs:
            if bits & B_STATE:
                rec[7], rec[8], post2 = aria_props(attrs)
            if role in CHECKABLE_ROLES:
                rec[9] = ", checked=" + quoted(tristate(attrs.get("aria-checked")))
            elif bits & A_ARIA_SELECTED:
                rec[9] = ", selected=True" if attrs["aria-selected"] == "true" else ", selected=False"
        elif role in CHECKABLE_ROLES:
            rec[9] = ", checked='false'"
        if (f & F_LIVE) or (bits & (A_ROLE | A_ARIA_LIVE)):
            live = live_props(role, attrs)
            if live:
                rec[7] = live + rec[7]
        if expanded >= 0:
            post2 = (", expanded=True" if expanded else ", expanded=False") + post2
        if code == C_FORM:
            c = ctx.with_form(self.open_form(bid, attrs, bits))
        elif code == C_NAV or code == C_MAIN or code == C_ARTICLE or code == C_ASIDE or code == C_SECTION:
            c = ctx.with_section()
        elif code == C_FIELDSET:
            if bits & A_DISABLED:
                c = ctx.with_fs_disabled()
        elif code == C_A and role == "link":
            url = ", url=" + quoted_obj(href_of(attrs))
        rec[10] = post2 + url

        if code == C_IMG or code == C_SVG:
            name = (aria or collapse(attrs.get("alt") or attrs.get("title") or "")) if attrs else ""
            if code == C_SVG:
                if not name:
                    t = first_descendant(node, TAG_TITLE)
                    name = collapse(node_text(t)) if t != NULL else ""
                # Icon internals are not exposed, but may hold bids.
                self.walk_hidden(node, c)
            rec[5] = name
            if bid is not None:
                self.pending[bid] = (tag, attrs, role, name, ", disabled=True" in rec[7])
            if acc is not None and name:
                acc.append(" " + name + " ")
            return 0

        block = not (f & F_INLINE)
        if role in NAME_FROM_CONTENT or role == "LabelText":
            mine = []
            child_acc = mine
        else:
            mine = None
            # An aria-label replaces this subtree's text in an outer name.
            child_acc = None if aria else acc
        if code == C_LABEL:
            target = attrs["for"] if bits & A_FOR else None
            if target:
                self.label_for.setdefault(target, []).append(mine if mine is not None else [node_text(node)])
            else:
                c = c.with_label([mine, False])
        if child_acc is not None and block:
            child_acc.append(" ")
        if code == C_DETAILS and not (bits & A_OPEN):
            self.walk_closed_details(node, depth + 1, idx, c)
        else:
            self.walk(node, depth + 1, idx, child_acc, c)
        if child_acc is not None and block:
            child_acc.append(" ")

        # The name, now that the subtree's text is known.
        name = aria or ""
        if not name:
            if role == "LabelText":
                pass  # Chromium names label lines '' and shows their text below
            elif mine is not None:
                name = collapse("".join(mine))
            elif code == C_FIELDSET or code == C_TABLE:
                want = C_LEGEND if code == C_FIELDSET else C_CAPTION
                ch = node.first_child
                while ch != NULL:
                    if ch.type != NODE_TEXT and code_of_node(ch) == want:
                        name = collapse(node_text(ch))
                        break
                    ch = ch.next
            if not name and (bits & A_TITLE) and role != "LabelText" and role != "paragraph":
                title = attrs["title"]
                if title:
                    name = collapse(title)
        rec[5] = name
        if (bits & A_ARIA_LABELLEDBY) and attrs["aria-labelledby"]:
            self.need_names.append((None, rec, attrs))
            if bid is not None:
                self.pending[bid] = (tag, attrs, rec)   # resolve() may rename it: frozen later
        elif bid is not None:
            self.pending[bid] = (tag, attrs, role, name, ", disabled=True" in rec[7])
        if acc is not None:
            if aria:
                acc.append(" " + aria + " ")
            elif mine is not None:
                acc.extend(mine)
        return 0

    cdef object implicit_role(self, int code, dict attrs, Ctx ctx):
        role = tag_roles[code]
        if role is not None:
            return role
        if code == C_A:
            return "link" if "href" in attrs else None
        if code == C_IMG:
            if "alt" in attrs and not (attrs["alt"] or "").strip() and not attrs.get("aria-label"):
                return None  # alt="" marks a decorative image: not exposed
            return "image"
        if code == C_SVG:
            return "image"
        if code == C_TH:
            return "rowheader" if (attrs.get("scope") or "").lower() == "row" else "columnheader"
        if code == C_HEADER:
            return None if ctx.in_section else "banner"
        if code == C_FOOTER:
            return None if ctx.in_section else "contentinfo"
        if code == C_SECTION or code == C_DIV:
            if attrs and (attrs.get("aria-label") or attrs.get("aria-labelledby")):
                return "region"
        return None

    cdef int visit_generic(self, node_t *node, str tag, int code, dict attrs, mask_t bits, bid, int depth,
                           int parent, list acc, Ctx ctx) except -1:
        cdef Ctx c = ctx
        cdef Pending p
        aria = attrs["aria-label"] if bits & A_ARIA_LABEL else None
        if bid is not None:
            p = self.register(bid, tag, "generic", attrs, False)
            if aria:
                p.name = collapse(aria)
        if code == C_FORM:
            c = ctx.with_form(self.open_form(bid, attrs, bits))
        elif code == C_SECTION:
            c = ctx.with_section()
        elif code == C_FIELDSET and "disabled" in attrs:
            c = ctx.with_fs_disabled()
        elif code == C_LABEL:  # role=presentation on a label: still labels
            target = attrs.get("for")
            if target:
                self.label_for.setdefault(target, []).append([node_text(node)])
            else:
                c = ctx.with_label([[node_text(node)], False])
        if acc is None:
            self.walk(node, depth, parent, None, c)
        elif aria and aria.strip():
            acc.append(" " + aria + " ")
            self.walk(node, depth, parent, None, c)
        elif tag_flags[code] & F_INLINE:
            self.walk(node, depth, parent, acc, c)
        else:
            acc.append(" ")
            self.walk(node, depth, parent, acc, c)
            acc.append(" ")
        return 0

    cdef int walk_closed_details(self, node_t *node, int depth, int parent, Ctx ctx) except -1:
        """A closed <details> renders its first <summary> only."""
        cdef bint seen_summary = False
        cdef node_t *child = node.first_child
        cdef int code = 0
        cdef mask_t bits = 0
        cdef dict attrs
        while child != NULL:
            if child.type != NODE_TEXT:
                tag = tag_of(child, &code)
                if not (tag_flags[code] & F_SKIP):
                    attrs = attrs_of(self.ac, child, &bits)
                    if code == C_SUMMARY and not seen_summary:
                        seen_summary = True
                        self.visit(child, tag, code, attrs, bits, depth, parent, None, ctx)
                    else:
                        self.hidden_element(child, tag, code, attrs, bits, attrs["bid"] if bits & B_BID else None, ctx)
            child = child.next
        return 0

    # Hidden content ----------------------------------------------------------------

    cdef int walk_hidden(self, node_t *node, Ctx ctx) except -1:
        """Register the elements, controls, forms and labels of a subtree without lines."""
        cdef node_t *child = node.first_child
        cdef int code = 0
        cdef mask_t bits = 0
        cdef dict attrs
        while child != NULL:
            if child.type != NODE_TEXT:
                tag = tag_of(child, &code)
                if not (tag_flags[code] & F_SKIP):
                    attrs = attrs_of(self.ac, child, &bits)
                    self.hidden_element(child, tag, code, attrs, bits, attrs["bid"] if bits & B_BID else None, ctx)
            child = child.next
        return 0

    cdef int hidden_element(self, node_t *node, str tag, int code, dict attrs, mask_t bits, bid, Ctx ctx) except -1:
        cdef Ctx c = ctx
        cdef Pending p
        if tag_flags[code] & F_CONTROL:
            # Hidden controls still take part in form submission.
            p = self.register(bid, tag, "generic", attrs, True)
            self.control(node, code, attrs, bits, p, ctx)
            p.role = self.control_role(code, attrs, bits, p)
            if code == C_BUTTON:
                p.content = node_text(node)
            elif code == C_SELECT:
                self.options(node, p, None, 0)
            if p.input_type != "hidden":  # <input type=hidden> has no name to resolve
                self.need_names.append((p, None, attrs))
            return 0
        if code == C_FORM:
            c = ctx.with_form(self.open_form(bid, attrs, bits))
        elif code == C_LABEL:
            target = attrs.get("for")
            if target:
                self.label_for.setdefault(target, []).append([node_text(node)])
            else:
                c = ctx.with_label([[node_text(node)], False])
        elif code == C_FIELDSET and "disabled" in attrs:
            c = ctx.with_fs_disabled()
        if bid is not None:
            role = explicit_role(attrs) if "role" in attrs else None
            if role is None:
                role = self.implicit_role(code, attrs, ctx) or "generic"
            p = self.register(bid, tag, role, attrs, True)
            if code == C_A:
                p.href = href_of(attrs)
            aria = attrs.get("aria-label")
            if aria and aria.strip():
                p.name = collapse(aria)
            elif role in NAME_FROM_CONTENT:
                p.name = collapse(node_text(node))
            elif role == "image":
                p.name = collapse(attrs.get("alt") or "")
        self.walk_hidden(node, c)
        return 0

    # Form controls ---------------------------------------------------------------

    cdef object control_role(self, int code, dict attrs, mask_t bits, Pending p):
        r = explicit_role(attrs) if bits & A_ROLE else None
        if r is not None and r != "generic":
            return r
        if code == C_SELECT:
            return "listbox" if p.multiple or select_size(attrs) > 1 else "combobox"
        if code == C_TEXTAREA:
            return "textbox"
        if code == C_BUTTON:
            return "button"
        t = p.input_type
        role = TEXT_INPUTS.get(t)
        if role is not None:
            return role
        if t == "checkbox" or t == "radio":
            return t
        if t in BUTTON_INPUTS:
            return "button"
        if t == "hidden":
            return "generic"
        return "textbox"  # date, time, color, unknown types...

    cdef int control(self, node_t *node, int code, dict attrs, mask_t bits, Pending p, Ctx ctx) except -1:
        """Fill the form-related fields of a control's pending element."""
        self.controls.append(p)
        if bits & A_FORM:
            p.form_attr = attrs["form"] or ""
        else:
            p.form = ctx.form
        p.field_name = attrs["name"] if bits & A_NAME else None
        p.disabled = (bits & A_DISABLED) != 0 or ctx.fs_disabled
        if code == C_INPUT:
            t = lowered(attrs["type"] or "text") if bits & A_TYPE else "text"
            p.input_type = t or "text"
            v = attrs["value"] if bits & A_VALUE else None
            if t == "checkbox" or t == "radio":
                p.value = "on" if not (bits & A_VALUE) else (v or "")
                p.checked = (bits & A_CHECKED) != 0
            else:
                p.value = v or ""
            p.labelable = t != "hidden"
        else:
            p.labelable = True
            if code == C_TEXTAREA:
                p.input_type = "textarea"
                p.value = node_text(node)
            elif code == C_SELECT:
                p.input_type = "select"
                p.multiple = (bits & A_MULTIPLE) != 0
            else:  # button
                p.value = (attrs["value"] or "") if bits & A_VALUE else ""
        lbl = ctx.label
        if lbl is not None and not lbl[1] and p.labelable:
            lbl[1] = True
            p.label = lbl[0]
        return 0

    cdef int visit_control(self, node_t *node, str tag, int code, dict attrs, mask_t bits, bid, int depth,
                           int parent, list acc, Ctx ctx) except -1:
        cdef list recs = self.recs
        cdef int idx
        cdef list rec
        cdef list mine
        cdef bint listbox
        cdef Pending p = self.register(bid, tag, "generic", attrs, False)
        self.control(node, code, attrs, bits, p, ctx)
        role = p.role = self.control_role(code, attrs, bits, p)
        idx = len(recs)
        rec = new_rec(1, depth, parent, bid, role)
        recs.append(rec)
        p.rec = rec
        if attrs and (bits & B_STATE):
            pre, post1, post2 = aria_props(attrs)
        else:
            pre = post1 = post2 = ""
        if (bits & A_REQUIRED) and ", required" not in post1:
            post1 += ", required"
        if p.disabled:
            pre = ", disabled=True"
        rec[7] = pre
        t = p.input_type
        if code == C_BUTTON:
            # Name from content; the button's text is also shown under it
            # (and dropped there again when the name contains it).
            mine = []
            self.walk(node, depth + 1, idx, mine, ctx if ctx.label is None else ctx.with_label(None))
            p.content = content = "".join(mine)
            if acc is not None:
                acc.extend(mine)
            if not attrs or not (bits & B_BUTTON_NAME):
                # Named by its content alone: no need to wait for resolve().
                p.name = rec[5] = collapse(content)
                rec[8] = post1
                rec[10] = post2 + described(attrs)
                return 0
        elif code == C_SELECT:
            listbox = p.multiple or select_size(attrs) > 1
            rec[0] = 4
            rec[11] = (p.multiple, listbox)
            if not listbox:
                post1 = ", hasPopup='menu'" + post1
                post2 = ", expanded=False" + post2
            elif p.multiple:
                post2 += ", multiselectable=True"
            self.options(node, p, rec, depth + 1)
        elif t == "checkbox" or t == "radio":
            rec[0] = 3
            rec[9] = ", checked='true'" if p.checked else ", checked='false'"
        elif role != "button":
            rec[0] = 2
            rec[11] = t == "password"
            v = p.value
            if v and t == "password":
                v = "•" * len(v)
            rec[6] = v or None
        rec[8] = post1
        rec[10] = post2 + described(attrs)
        self.need_names.append((p, rec, attrs))
        return 0

    cdef int options(self, node_t *node, Pending p, list rec, int depth) except -1:
        """Collect a select's options, and their lines when `rec` (the select's line) is given."""
        cdef list opts = []
        cdef node_t *child = node.first_child
        cdef node_t *sub
        cdef int code
        cdef bint gdis
        cdef bint listbox
        cdef bint multiple
        cdef int i, last, first, n
        cdef list sel
        cdef list option_recs
        cdef list orec
        cdef Pending op
        while child != NULL:
            if child.type != NODE_TEXT:
                code = code_of_node(child)
                if code == C_OPTION:
                    option_data(self.ac, child, False, opts)
                elif code == C_OPTGROUP:
                    gdis = "disabled" in attrs_only(self.ac, child)
                    sub = child.first_child
                    while sub != NULL:
                        if sub.type != NODE_TEXT and code_of_node(sub) == C_OPTION:
                            option_data(self.ac, sub, gdis, opts)
                        sub = sub.next
            child = child.next
        multiple = bool(p.multiple)
        listbox = multiple or select_size(p.attrs) > 1
        n = len(opts)
        # Default selectedness, per the HTML "selectedness setting algorithm".
        if multiple:
            sel = [o[2] for o in opts]
        else:
            sel = [False] * n
            last = -1
            for i in range(n):
                if opts[i][2]:
                    last = i
            if last < 0 and not listbox:
                for i in range(n):
                    if not opts[i][3]:
                        last = i
                        break
            if last >= 0:
                sel[last] = True
        p.options = tuple([(opts[i][0], opts[i][1], sel[i]) for i in range(n)])
        first = -1
        for i in range(n):
            if sel[i]:
                first = i
                break
        p.value = opts[first][0] if first >= 0 else None
        if rec is not None and not listbox and first >= 0:
            rec[6] = opts[first][1] or None
        hidden = rec is None
        option_recs = []
        pbid = p.bid
        for i in range(n):
            value, label, _, disabled, obid, oattrs = opts[i]
            orec = None
            if rec is not None:
                orec = new_rec(5, depth, -1, obid, "option")
                orec[5] = label
                if disabled:
                    orec[7] = ", disabled=True"
                orec[9] = ", selected=True" if sel[i] else ", selected=False"
                orec[11] = (pbid, i, p.multiple)
                option_recs.append((len(self.recs), value, label))
                self.recs.append(orec)
            if obid is not None:
                op = self.register(obid, "option", "option", oattrs, hidden)
                op.name = label
                op.value = value
                op.disabled = disabled
                op.checked = sel[i]
                op.rec = orec
        if rec is not None and pbid is not None:
            self.selects.append((pbid, option_recs))
        return 0


cdef int option_data(AttrCache ac, node_t *node, bint group_disabled, list out) except -1:
    cdef dict attrs = attrs_only(ac, node)
    text = collapse(node_text(node))
    label = attrs.get("label")
    label = collapse(label) if label else text
    # A bare `value` attribute is an empty value, not a missing one.
    value = (attrs["value"] or "") if "value" in attrs else None
    out.append((text if value is None else value, label, "selected" in attrs,
                group_disabled or "disabled" in attrs, attrs.get("bid"), attrs))
    return 0


def walk_body(builder, size_t body) -> bytes:
    """``builder.walk(body, 1, -1, None, _Ctx())``, compiled: `body` is the ``mem_id`` of
    the document's ``<body>`` (a LexborNode of a parser that stays alive meanwhile).

    A text record is its str alone; returns their depths and parents (for format_lines),
    as C ints in record order."""
    if not configured or el_qualified_name == NULL:
        raise RuntimeError("simweb._axwalk is not set up")
    global spare_cache
    cdef Walker w = Walker(builder)
    w.ac = take_cache()
    w.walk(<node_t *> body, 1, -1, None, new_ctx(None, None, False, False))
    spare_cache = w.ac   # not on an exception: the next walk then makes a new cache
    if w.ntexts == 0:
        return b""
    return (<char *> w.texts)[:w.ntexts * 2 * sizeof(int)]


def head_title(size_t head):
    """The loop of axtree._title over ``<head>``'s children, compiled: the collapsed text of
    the first ``<title>`` child, or None (`head` is the ``mem_id`` of the document's
    ``<head>``, a LexborNode of a parser that stays alive meanwhile)."""
    cdef node_t *child = (<node_t *> head).first_child
    cdef int code = 0
    if not configured or el_qualified_name == NULL:
        raise RuntimeError("simweb._axwalk is not set up")
    while child != NULL:
        if child.type != NODE_TEXT and tag_of(child, &code) == "title":
            return collapse(node_text(child))
        child = child.next
    return None


cdef list TABS = ["\t" * i for i in range(64)]


cdef int quote_kind(str s) noexcept:
    """How repr() quotes `s` when it needs no escapes: 1 with single quotes, 2 with double
    quotes (it holds a single quote and no double quote), 0 when repr() must do it (a
    backslash, a character repr() escapes, or both kinds of quote). repr() escapes ASCII
    below space and DEL, and any other character that is not printable
    (Py_UNICODE_ISPRINTABLE, what unicode_repr asks)."""
    cdef const lxb_char_t *p
    cdef Py_ssize_t i, n
    cdef lxb_char_t c
    cdef Py_UCS4 ch
    cdef int kind
    cdef const void *data
    cdef bint single = False
    cdef bint double = False
    n = PyUnicode_GET_LENGTH(s)
    if PyUnicode_IS_ASCII(s):
        p = <const lxb_char_t *> PyUnicode_DATA(s)
        for i in range(n):
            c = p[i]
            if c < 32 or c == 127 or c == 92:
                return 0
            if c == 39:
                single = True
            elif c == 34:
                double = True
    else:
        kind = PyUnicode_KIND(s)
        data = PyUnicode_DATA(s)
        for i in range(n):
            ch = PyUnicode_READ(kind, data, i)
            if ch < 127:
                if ch < 32 or ch == 92:
                    return 0
                if ch == 39:
                    single = True
                elif ch == 34:
                    double = True
            elif ch == 127 or not Py_UNICODE_ISPRINTABLE(ch):
                return 0
    if not single:
        return 1
    return 0 if double else 2


cdef str live_props(str role, dict attrs):
    """A live region's properties (simweb/web/axtree.py's _live)."""
    d = LIVE_ROLES.get(role)
    live, atomic = d if d is not None else ("", False)
    relevant = None
    if attrs:
        v = attrs.get("aria-live")
        if v:
            live = v
        a = attrs.get("aria-atomic")
        if a:
            atomic = a.lower() == "true"
        relevant = attrs.get("aria-relevant")
    if not live or live == "off":
        return ""
    return ", live=" + quoted(live) + (", atomic" if atomic else "") + ", relevant=" + quoted(relevant or "additions text")


cdef inline str described(dict attrs):
    """A form control's describedby property (simweb/web/axtree.py's _described)."""
    if not attrs:
        return ""
    d = attrs.get("aria-describedby")
    return ", describedby=" + quoted(d) if d else ""


cdef inline str quoted(str s):
    """repr(s), in one join when it only needs quotes (no second scan, no escaping copy)."""
    cdef int q = quote_kind(s)
    if q == 1:
        return f"'{s}'"
    if q == 2:
        return f'"{s}"'
    return repr(s)


cdef inline str quoted_obj(o):
    """repr(o): quoted() for a str."""
    return quoted(<str> o) if type(o) is str else repr(o)


def format_lines(str title, list recs, bytes texts, dict bid_line, list kept, bint freeze) -> list:
    """axtree._format_lines, compiled (same lines, same kept records), over walk_body()'s
    records: `texts` holds the depth and parent of each text record (a str in `recs`).
    Each line is one join of its pieces; a name that repr() would only quote is quoted in
    that join."""
    cdef list lines = ["RootWebArea " + quoted(title) + ", focused"]
    cdef Py_ssize_t r, n = len(recs)
    cdef Py_ssize_t d, par
    cdef int q
    cdef list rec
    cdef str name, tabs, head, text, role, pre, post1, dyn, post2, line
    cdef object pname
    cdef const int *tm = <const int *> (<char *> texts)
    cdef Py_ssize_t t = 0, ntexts = len(texts) // (2 * sizeof(int))
    for r in range(n):
        item = recs[r]
        if type(item) is str:  # StaticText
            if t >= ntexts:
                raise ValueError("format_lines: more text records than text positions")
            text = <str> item
            d = tm[2 * t]
            par = tm[2 * t + 1]
            t += 1
            # Drop text already said by the nearest ancestor line's name.
            if par >= 0:
                pname = recs[par][5]
                if PyUnicode_Contains(pname, text) == 1:
                    continue
            tabs = TABS[d] if d < 64 else "\t" * d
            q = quote_kind(text)
            if q == 1:
                lines.append(f"{tabs}StaticText '{text}'")
            elif q == 2:
                lines.append(f'{tabs}StaticText "{text}"')
            else:
                lines.append(f"{tabs}StaticText {text!r}")
            continue
        rec = item
        d = rec[1]
        tabs = TABS[d] if d < 64 else "\t" * d
        bid = rec[3]
        role = rec[4]
        name = rec[5]
        value = rec[6]
        pre = rec[7]
        post1 = rec[8]
        dyn = rec[9]
        post2 = rec[10]
        if bid is None and rec[0] != 5:
            # No overlay can reach this line: format it in one go, keep no record.
            q = quote_kind(name)
            if value:
                if q == 1:
                    line = f"{tabs}{role} '{name}' value={quoted(value)}{pre}{post1}{dyn}{post2}"
                else:
                    line = f"{tabs}{role} {quoted(name)} value={quoted(value)}{pre}{post1}{dyn}{post2}"
            elif q == 1:
                line = f"{tabs}{role} '{name}'{pre}{post1}{dyn}{post2}"
            elif q == 2:
                line = f'{tabs}{role} "{name}"{pre}{post1}{dyn}{post2}'
            else:
                line = f"{tabs}{role} {name!r}{pre}{post1}{dyn}{post2}"
            lines.append(line)
            continue
        q = quote_kind(name)
        if bid is None:
            head = f"{tabs}{role} '{name}'" if q == 1 else f"{tabs}{role} {quoted(name)}"
        else:
            head = f"{tabs}[{bid}] {role} '{name}'" if q == 1 else f"{tabs}[{bid}] {role} {quoted(name)}"
            bid_line[bid] = len(kept)
        rec[12] = head
        rec[13] = len(lines)
        if freeze:
            recs[r] = item = tuple(rec)
        kept.append(item)
        if value:
            lines.append(f"{head} value={quoted(value)}{pre}{post1}{dyn}{post2}")
        else:
            lines.append(f"{head}{pre}{post1}{dyn}{post2}")
    return lines


def freeze_references(b) -> None:
    """axtree._freeze_references, compiled."""
    cdef dict pending = b.pending
    cdef list recs = b.recs
    for bid, v in pending.items():
        if type(v) is tuple and len(<tuple> v) == 3:   # the walk made the others final already
            tag, attrs, rec = v
            pending[bid] = (tag, attrs, rec[4], rec[5], ", disabled=True" in rec[7])
        elif type(v) is Pending:
            (<Pending> v).rec = None
    for p in b.controls:
        (<Pending> p).rec = None
    b.selects[:] = [(bid, [(recs[i], value, label) for i, value, label in opts]) for bid, opts in b.selects]




def resolve(b) -> None:
    """axtree._Builder.resolve, compiled (labelledby stays the builder's own method)."""
    cdef dict label_text = {}
    cdef list parts
    cdef dict form_ids
    cdef dict groups
    cdef list members
    cdef Pending p, m
    for key, plist in b.label_for.items():
        label_text[key] = collapse(" ".join(["".join(pieces) for pieces in plist]))
    for p, rec, attrs in b.need_names:
        # Precedence as in accname: aria-labelledby, aria-label, <label>,
        # then content (buttons), value, placeholder, title.
        name = b.labelledby(attrs["aria-labelledby"]) if attrs.get("aria-labelledby") else ""
        if p is None or p.tag not in CONTROL_NAMES:
            if name and rec is not None:
                rec[5] = name
                if p is not None:
                    p.name = name
            continue
        if not name:
            name = collapse(attrs.get("aria-label") or "")
        if not name and p.labelable and p.tag != "button":
            parts = []
            if p.label is not None:
                parts.append(collapse("".join(p.label)))
            cid = attrs.get("id")
            if cid and cid in label_text:
                parts.append(label_text[cid])
            name = " ".join([x for x in parts if x])
        if not name:
            t = p.input_type
            if p.tag == "button":
                name = collapse(p.content or "")
            elif t in DEFAULT_BUTTON_LABEL or t == "button":
                v = attrs.get("value")
                if t == "image":
                    v = attrs.get("alt") or v
                name = collapse(v) if v else DEFAULT_BUTTON_LABEL.get(t or "", "")
            elif attrs.get("placeholder"):
                name = collapse(attrs["placeholder"])
        if not name and attrs.get("title"):
            name = collapse(attrs["title"])
        p.name = name
        if rec is not None:
            rec[5] = name
    # Form owners of controls with form="id"; then radio groups, which
    # are per (form owner, name).
    form_ids = b.form_ids
    groups = {}
    for p in b.controls:
        if p.form_attr is not None:
            p.form = form_ids.get(p.form_attr)
        if p.input_type == "radio" and p.field_name:
            groups.setdefault((p.form, p.field_name), []).append(p)
    for members in groups.values():
        # Only the last default-checked radio of a group stays checked.
        checked = [m for m in members if m.checked]
        for m in checked[:-1]:
            m.checked = False
            if type(m.rec) is list:  # records are still mutable lists during the walk
                m.rec[9] = ", checked='false'"
        if len(members) > 1:
            bids = tuple([m.bid for m in members if m.bid is not None])
            if len(bids) > 1:
                b.radio_groups.append(bids)


cdef extern from "Python.h":
    bytes PyBytes_FromStringAndSize(const char *v, Py_ssize_t size)

cdef unsigned char *utf8_buf = NULL   # utf8's scratch, grown as needed, kept between calls
cdef Py_ssize_t utf8_cap = 0


def utf8(str s) -> bytes:
    """``s.encode("utf-8", "ignore")``, the bytes selectolax feeds lexbor for a str, made
    faster for a page held as two-byte characters (one character above U+00FF, a "—" or a
    "›", makes the whole page so): CPython encodes those one character at a time, this
    copies runs of ASCII four characters at a time. Other strings (ASCII and Latin-1, which
    CPython already encodes by runs; four-byte ones) and a string with a lone surrogate
    (which "ignore" drops) go to ``str.encode`` itself."""
    global utf8_buf, utf8_cap
    if PyUnicode_KIND(s) != 2:
        return s.encode("utf-8", "ignore")
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(s), i = 0, j = 0
    cdef const unsigned short *src = <const unsigned short *> PyUnicode_DATA(s)
    cdef unsigned long long block
    cdef unsigned int c
    cdef unsigned char *grown
    if 3 * n > utf8_cap:
        grown = <unsigned char *> realloc(utf8_buf, 3 * n)
        if grown == NULL:
            return s.encode("utf-8", "ignore")
        utf8_buf = grown
        utf8_cap = 3 * n
    cdef unsigned char *dst = utf8_buf
    while i < n:
        if i + 4 <= n:
            memcpy(&block, src + i, 8)
            if (block & 0xFF80FF80FF80FF80ULL) == 0:   # four ASCII characters
                dst[j] = <unsigned char> src[i]
                dst[j + 1] = <unsigned char> src[i + 1]
                dst[j + 2] = <unsigned char> src[i + 2]
                dst[j + 3] = <unsigned char> src[i + 3]
                i += 4
                j += 4
                continue
        c = src[i]
        i += 1
        if c < 0x80:
            dst[j] = <unsigned char> c
            j += 1
        elif c < 0x800:
            dst[j] = <unsigned char> (0xC0 | (c >> 6))
            dst[j + 1] = <unsigned char> (0x80 | (c & 0x3F))
            j += 2
        elif 0xD800 <= c <= 0xDFFF:   # a lone surrogate (a pair needs four-byte storage)
            return s.encode("utf-8", "ignore")
        else:
            dst[j] = <unsigned char> (0xE0 | (c >> 12))
            dst[j + 1] = <unsigned char> (0x80 | ((c >> 6) & 0x3F))
            dst[j + 2] = <unsigned char> (0x80 | (c & 0x3F))
            j += 3
    return PyBytes_FromStringAndSize(<const char *> dst, j)
