"""The in-page script that finds and numbers a page's interactive regions.

It follows the rules of WebGym's browser server, so that the element ids, the regions
and their order are the ones a WebGym client expects:

* ids are the ``__elementId`` attribute, numbered from 10 in the order elements are
  first found, and kept for the life of the document (a new document starts at 10);
* candidates are, in this order: form controls, links and focusable elements that are
  enabled and visible; enabled visible elements with a widget role; and the outermost
  element of every run of a non-default mouse cursor. Of these, an element counts when
  the centre of one of its client rects is not covered by another element. Then come,
  from the document and its open shadow roots, every ``<option>``, every file input, and
  every enabled visible input, select, textarea or button, covered or not;
* an option is reported only while its select is focused (or open), or when the option
  itself is visible;
* a region is ``{tag_name, role, aria_name, v_scrollable, rects}``: ``tag_name`` is the
  lower-case tag, ``input, type=<type>`` for an input with a type attribute; ``role`` is
  the ``role`` attribute, or the implicit role of a few tags, or ``""``; ``rects`` holds
  the element's bounding client rect;
* the result maps ids to regions; ids are integer strings, so a JavaScript object (and
  the JSON built from it) lists them in ascending order.
"""
from __future__ import annotations

#: Defines ``window.__simwebMarks`` once per document (also installed as an init script).
PAGE_SCRIPT = r"""
(() => {
  if (window.__simwebMarks) return;
  let counter = 10;
  const ATTR = '__elementId';
  const IMPLICIT_ROLE = {
    'a': 'link', 'area': 'link', 'button': 'button', 'input, type=button': 'button',
    'input, type=checkbox': 'checkbox', 'input, type=email': 'textbox', 'input, type=number': 'spinbutton',
    'input, type=radio': 'radio', 'input, type=range': 'slider', 'input, type=reset': 'button',
    'input, type=search': 'searchbox', 'input, type=submit': 'button', 'input, type=tel': 'textbox',
    'input, type=text': 'textbox', 'input, type=url': 'textbox', 'search': 'search', 'select': 'combobox',
    'option': 'option', 'textarea': 'textbox'
  };
  const WIDGET_ROLES = new Set(['scrollbar', 'searchbox', 'slider', 'spinbutton', 'switch', 'tab', 'treeitem',
    'button', 'checkbox', 'gridcell', 'link', 'menuitem', 'menuitemcheckbox', 'menuitemradio', 'option',
    'progressbar', 'radio', 'textbox', 'combobox', 'menu', 'tree', 'treegrid', 'grid', 'listbox',
    'radiogroup', 'widget']);
  const INERT_CURSORS = new Set(['auto', 'default', 'none', 'text', 'vertical-text', 'not-allowed', 'no-drop']);
  const CONTROLS = "input, select, textarea, button, [href], [onclick], [contenteditable], [tabindex]:not([tabindex='-1'])";
  const SHADOW_TAGS = "input,option,select,textarea,button,href,onclick,contenteditable,tabindex:not([tabindex='-1'])";
  const BARE_TAGS = new Set(['input', 'option', 'select', 'textarea', 'button']);

  const shown = (el) => !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length);
  const usable = (el) => !el.disabled && shown(el);
  const cursorOf = (el) => window.getComputedStyle(el).cursor;
  const uncovered = (el, x, y) => {
    let hit = document.elementFromPoint(x, y);
    if (hit === null) return true;   // outside the viewport: nothing can cover it
    for (; hit; hit = hit.parentNode) if (hit === el) return true;
    return false;
  };

  function candidates() {
    const first = [], seen = new Set();
    const add = (el) => { if (!seen.has(el)) { seen.add(el); first.push(el); } };
    for (const el of document.querySelectorAll(CONTROLS)) if (usable(el)) add(el);
    for (const el of document.querySelectorAll('[role]')) {
      if (usable(el) && WIDGET_ROLES.has(el.getAttribute('role'))) add(el);
    }
    for (const node of document.querySelectorAll('*')) {
      if (!usable(node)) continue;
      const cursor = cursorOf(node);
      if (INERT_CURSORS.has(cursor)) continue;
      let top = node;
      while (top.parentNode && top.parentNode.nodeType === 1 && cursorOf(top.parentNode) === cursor) top = top.parentNode;
      add(top);
    }
    const out = [];
    for (const el of first) {
      for (const r of el.getClientRects()) {
        if (uncovered(el, r.left + r.width / 2, r.top + r.height / 2)) { out.push(el); break; }
      }
    }
    const roots = [document], more = [];
    while (roots.length) {
      const root = roots.pop();
      more.push(...root.querySelectorAll(SHADOW_TAGS));
      for (const el of root.querySelectorAll('*')) if (el.shadowRoot && el.shadowRoot.mode === 'open') roots.push(el.shadowRoot);
    }
    for (const el of more) {
      const tag = el.tagName.toLowerCase();
      if ((tag === 'input' && el.getAttribute('type') == 'file') || tag === 'option') { out.push(el); continue; }
      if (usable(el) && BARE_TAGS.has(tag)) out.push(el);
    }
    return out;
  }

  function focusedId() {
    for (let el = document.activeElement; el; el = el.parentNode) {
      if (el.hasAttribute && el.hasAttribute(ATTR)) return el.getAttribute(ATTR);
    }
    return null;
  }

  const innerTextOf = (el) => (el && el.innerText ? el.innerText.trim() : '');

  function nameOf(el) {
    if (el.hasAttribute('aria-label')) return el.getAttribute('aria-label');
    const span = el.querySelector('span.label');
    if (span) return span.innerText;
    if (el.hasAttribute('aria-labelledby')) {
      let text = '';
      for (const id of el.getAttribute('aria-labelledby').split(' ')) {
        const label = document.getElementById(id);
        if (label) text += ' ' + innerTextOf(label);
      }
      return text.trim();
    }
    if (el.hasAttribute('id')) {
      try {
        let text = '';
        for (const label of document.querySelectorAll('label[for="' + CSS.escape(el.getAttribute('id')) + '"]')) {
          text += label.innerText + ' ';
        }
        text = text.trim();
        if (text !== '') return text;
      } catch (e) { /* an id CSS cannot express */ }
    }
    if (el.hasAttribute('name')) return el.getAttribute('name');
    if (el.parentElement && el.parentElement.tagName == 'LABEL') return el.parentElement.innerText;
    if (el.hasAttribute('alt')) return el.getAttribute('alt');
    if (el.hasAttribute('title')) return el.getAttribute('title');
    return innerTextOf(el);
  }

  function tagOf(el) {
    const tag = el.tagName.toLowerCase();
    return (tag == 'input' && el.hasAttribute('type')) ? tag + ', type=' + el.getAttribute('type') : tag;
  }

  function regions() {
    for (const el of candidates()) if (!el.hasAttribute(ATTR)) el.setAttribute(ATTR, '' + (counter++));
    const focused = focusedId();
    const out = {};
    for (const el of candidates()) {
      if (el.tagName.toLowerCase() === 'option') {
        const select = el.closest('select');
        const selectFocused = !!(select && select.hasAttribute(ATTR) && focused === select.getAttribute(ATTR));
        if (!(selectFocused || shown(el) || (select && select.hasAttribute('open')))) continue;
      }
      const tag = tagOf(el);
      const role = el.hasAttribute('role') ? el.getAttribute('role') : (IMPLICIT_ROLE[tag] || '');
      out[el.getAttribute(ATTR)] = {
        tag_name: tag,
        role: role,
        aria_name: nameOf(el),
        v_scrollable: el.scrollHeight - el.clientHeight >= 1,
        rects: [JSON.parse(JSON.stringify(el.getBoundingClientRect()))],
      };
    }
    return out;
  }

  function microdata() {
    const add = (info, name, value) => {
      info[name] = Object.prototype.hasOwnProperty.call(info, name) ? [info[name], value] : value;
    };
    const clean = (s) => s.replace(/\s/gi, ' ').trim();
    const walk = (item, info) => {
      for (const child of item.children) {
        if (child.hasAttribute('itemscope')) {
          if (child.hasAttribute('itemprop')) {
            const sub = {itemType: child.getAttribute('itemtype')};
            walk(child, sub);
            for (const p of child.getAttribute('itemprop').split(' ')) add(info, p, sub);
          }
        } else if (child.hasAttribute('itemprop')) {
          for (const p of child.getAttribute('itemprop').split(' ')) {
            add(info, p, p === 'url' ? child.href
              : clean(child.getAttribute('content') || child.content || child.textContent || child.src || ''));
          }
          walk(child, info);
        } else {
          walk(child, info);
        }
      }
    };
    const items = [];
    for (const el of document.querySelectorAll('[itemscope]')) {
      const info = {itemType: el.getAttribute('itemtype')};
      walk(el, info);
      items.push(info);
    }
    return items;
  }

  function metadata() {
    const out = {};
    const ld = Array.from(document.querySelectorAll('script[type="application/ld+json"]')).map(s => s.innerHTML.trim());
    if (ld.length > 0) {
      try { out.jsonld = JSON.parse(ld); } catch (e) { out.jsonld = ld; }
    }
    const items = microdata();
    if (items.length > 0) out.microdata = items;
    const tags = {};
    let any = false;
    for (const m of document.querySelectorAll('meta')) {
      const key = m.hasAttribute('name') ? m.getAttribute('name') : (m.hasAttribute('property') ? m.getAttribute('property') : null);
      if (key === null) continue;
      if (m.hasAttribute('content')) { tags[key] = m.getAttribute('content'); any = true; }
    }
    if (any) out.meta_tags = tags;
    return out;
  }

  // Set-of-marks drawing, in a closed shadow root: no page style reaches it, and the
  // region finder (which walks open shadow roots only) never sees it.
  const HOST_ID = '__simweb_marks';
  function clearMarks() {
    const host = document.getElementById(HOST_ID);
    if (host) host.remove();
  }
  function drawMarks(marks) {
    clearMarks();
    const host = document.createElement('div');
    host.id = HOST_ID;
    host.style.cssText = 'position:fixed;left:0;top:0;width:0;height:0;margin:0;padding:0;border:0;' +
      'z-index:2147483647;pointer-events:none;';
    const root = host.attachShadow({mode: 'closed'});
    const vw = document.documentElement.clientWidth;
    for (const m of marks) {
      const r = m.rect;
      const frame = document.createElement('div');
      frame.style.cssText = 'position:fixed;box-sizing:border-box;pointer-events:none;' +
        `left:${r.left}px;top:${r.top}px;width:${r.right - r.left}px;height:${r.bottom - r.top}px;` +
        `border:2px solid ${m.color};background:${m.color}28;`;
      root.appendChild(frame);
    }
    for (const m of marks) {
      const r = m.rect;
      const label = document.createElement('div');
      label.textContent = m.label;
      label.style.cssText = 'position:fixed;pointer-events:none;font:bold 13px/1 sans-serif;padding:2px 3px;' +
        `background:${m.color};color:${m.ink};right:${vw - r.right}px;` +
        (m.below ? `top:${r.bottom}px;` : `top:${r.top}px;transform:translateY(-100%);`);
      root.appendChild(label);
    }
    document.documentElement.appendChild(host);
  }

  window.__simwebMarks = {regions, metadata, focusedId, drawMarks, clearMarks};
})();
"""

#: Expressions evaluated after :data:`PAGE_SCRIPT` (which is re-run first when missing).
REGIONS_JS = "() => window.__simwebMarks.regions()"
DRAW_MARKS_JS = "(marks) => window.__simwebMarks.drawMarks(marks)"
CLEAR_MARKS_JS = "() => window.__simwebMarks && window.__simwebMarks.clearMarks()"
METADATA_JS = "() => window.__simwebMarks.metadata()"
