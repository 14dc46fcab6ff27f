"""Answers as users write them, per answer type: at least 30 right and 30 wrong phrasings
each. Right ones must be paid (the site's own formats, inside ordinary prose); wrong ones
must not (a near value, two candidates, every candidate at once, a negation).

The reading follows what the question asks for: one number ("Total - 382" is 382, not
-382), one amount, one date, a list of n numbers ("3,4,5" is three numbers when three are
asked for), a set of names with nothing else named."""
from __future__ import annotations

from datetime import date

import pytest

from simweb.judging.verify import answer_check

ALL_UP_TO_400 = " ".join(str(i) for i in range(1, 401))

NUMBER = (382, "number of open issues", [
    "382", "382.", "382 issues", "There are 382 open issues.", "Total - 382", "Total: 382", "total — 382",
    "The count is 382", "I counted 382.", "It's 382", "**382**", "`382`", "Answer: 382",
    "382 open issues match the filters", "As of Mar 5, 2026 there are 382 open issues.",
    "There are 382 open issues as of 2026-03-05", "382 in all", "382.0", "382.00", "The number is 382!",
    "382 results", "Result count - 382", "(382)", "[382]", "It shows “382 issues”.", "  382  \n", "Total = 382",
    "382 total", "I see 382 issues on the page", "There are 382 open issues in aperture/website2",
    "Open issues: 382 (I checked twice: 382)", "just 382 open issues", "382 open issues (page 1 of 4)",
    "Showing 1-25 of 382 open issues", "382 open issues · 41 closed",
], [
    "381", "383", "-382", "Total: -382", "382 or 383", "between 380 and 390", ALL_UP_TO_400,
    "380, 381, 382, 383", "3,8,2", "38,2", "3820", "38.2", "382.5", "0", "", "none", "n/a", "I don't know",
    "about 380", "382 or so, maybe 383", "It is either 382 or 400", "382-383", "382/400", "Page 1 of 382",
    "There are 200 open and 182 closed", "382 thousand", "382 open issues, 383 open issues", "1 open 2 open 382 open",
    "383 open issues (382 on page 1)", "382k", "1,382", "382,000", "v382", "three hundred",
])

MONEY = (123450, "total price of the stay", [
    "$1,234.50", "1234.50", "1234.5", "$1234.50", "USD 1,234.50", "1,234.50 USD", "1,234.50 dollars",
    "The total is $1,234.50.", "Total - $1,234.50", "It costs $1,234.50 for 3 nights.", "$1,234.50 (3 nights, 2 guests)",
    "Total price: $1,234.50", "**$1,234.50**", "The stay costs $1,234.50 in total", "$1,234.500", "1,234.50",
    "Price — $1,234.50", "I found $1,234.50 as the total for Mar 5, 2026 – Mar 8, 2026", "$ 1,234.50", "US$1,234.50",
    "the total comes to 1,234.50", "Answer: 1234.50 USD", "$1,234.50 total (taxes included)", "Total: $1,234.50",
    "It would be $1,234.50.", "1234.50 dollars", "$1234.5", "My answer is $1,234.50", "Cost = $1,234.50",
    "The lowest total price is $1,234.50", "$1,234.50 for the whole stay of 3 nights, 2 guests",
], [
    "$1,234.51", "$1,234.49", "$1,234", "$1,234.05", "$12,345.00", "$123.45", "1234.505", "$1,234.50 or $1,300.00",
    "$1,200 - $1,300", "$0.00", "free", "", "n/a", "$1,234.50 $1,234.51", " ".join(f"${i}.50" for i in range(1200, 1300)),
    "-$1,234.50", "Total: -$1,234.50", "1,234.50, 1,300.00", "1.234,50", "1234", "$123,450", "12345", "$1,234.50k",
    "1234.50 or 1300", "$1,234.50 - $50.00 discount = $1,184.50", "$1.2345", "$12.3450", "1,234.5O", "$1,243.50",
    "$2,234.50", "It costs 1,234.50 or 1,234.60",
])

PERCENT = (45, "percentage complete", [
    "45", "45%", "45 %", "45 percent", "45 per cent", "45% complete", "45% complete · 9 of 20 issues closed · 11 open",
    "It is 45% complete.", "The milestone is 45% done (9 of 20 issues closed).", "Progress: 45%", "45.0%",
    "Progress - 45%", "**45%**", "about 45% (9/20)", "45 pct", "Complete: 45 percent", "45%.", "(45%)",
    "It shows 45% complete", "45% of the issues are closed", "The tracker says 45% complete.", "45.00",
    "45% complete as of Mar 5, 2026", "Answer: 45", "45 it is", "It's 45 percent", "I read 45%.",
    "45% — 9 closed, 11 open", "Closed share: 45%", "That milestone is at 45%",
], [
    "46", "44%", "45.5%", "-45%", "Progress: -45%", "45% or 50%", "9 of 20", "9/20", "0.45", "55% open",
    "45% complete, 55% remaining", "", "n/a", "none", "all", "4.5%", "450%", "45%, 46%, 47%",
    " ".join(f"{i}%" for i in range(101)), "between 40% and 50%", "four", "45k%", "v45", "9 closed, 11 open", "4 5%", "54%",
    "45%? maybe 46%", "100%", "0%", "45% or so, 46% tops",
])

DATE = (date(2026, 3, 5), "due date", [
    "2026-03-05", "Mar 5, 2026", "March 5, 2026", "Joined March 5, 2026", "Joined Mar 5, 2026",
    "It is due on Mar 5, 2026.", "Due: Mar 5, 2026", "5 March 2026", "5th March 2026", "the 5th of March, 2026",
    "March 5th, 2026", "Thursday, March 5, 2026", "Thu Mar 5, 2026", "3/5/2026", "03/05/2026", "2026/03/05",
    "March 5 2026", "Mar. 5, 2026", "MARCH 5, 2026", "Published March 5, 2026 by Jane",
    "free cancellation until Mar 5, 2026 (3 days before arrival)", "2026-03-05T00:00:00Z", "On 2026-03-05.",
    "It was placed on Mar 5, 2026 (2026-03-05)", "March 05, 2026", "The order date is Thursday 5 March 2026",
    "**Mar 5, 2026**", "“March 5, 2026”", "Date — Mar 5, 2026", "5 Mar 2026", "due Mar 5, 2026 · 12 open issues",
], [
    "2026-03-06", "Mar 6, 2026", "March 5, 2025", "March 5", "Mar 5", "5 March", "2026-05-03", "5/3/2026",
    "Mar 5, 2026 or Mar 6, 2026", "between Mar 4, 2026 and Mar 6, 2026", "March 2026", "2026", "", "n/a", "yesterday",
    "Mar 5, 2026 to Mar 8, 2026", "April 5, 2026", "March 15, 2026", "March 5, 2062", "2026-03-50",
    "Mar 5, 2026, Mar 6, 2026, Mar 7, 2026", "Joined Apr 5, 2026", "5 Mar 2027", "February 5, 2026", "Mar 4, 2026",
    "2026-03-04", "03/06/2026", "Mar 31, 2026", "Thursday", "Mar 5, 2026 (or maybe Mar 5, 2025)",
    " ".join(f"2026-03-{d:02d}" for d in range(1, 32)),
])

TEXT = ("Fix login redirect loop", "newest issue's title", [
    "Fix login redirect loop", "fix login redirect loop", "FIX LOGIN REDIRECT LOOP", "Fix login redirect loop.",
    "“Fix login redirect loop”", '"Fix login redirect loop"', "'Fix login redirect loop'", "`Fix login redirect loop`",
    "**Fix login redirect loop**", "The newest issue's title is “Fix login redirect loop”.",
    'The newest issue is titled "Fix login redirect loop"', "The title is Fix login redirect loop",
    "Answer: Fix login redirect loop", "It is called Fix login redirect loop.", "Fix login redirect loop is the newest issue",
    "Fix login redirect loop (the newest issue)", "The newest issue's title: Fix login redirect loop",
    "I found it: “Fix login redirect loop”", "Title — Fix login redirect loop", "  fix   login redirect   loop  ",
    "Fix login redirect loop!", "It's “Fix login redirect loop”.", "The answer is: Fix login redirect loop",
    "Newest: Fix login redirect loop", "‘Fix login redirect loop’", "«Fix login redirect loop»",
    "Fix login redirect loop is the title", "The newest one is Fix login redirect loop",
    "The title of the newest issue is Fix login redirect loop.", "Here it is: Fix login redirect loop",
], [
    "Fix login redirect", "Fix login redirect loops", "Fix the login redirect loop", "Login redirect loop",
    "Fix login redirect loop or Add CSV import", "“Fix login redirect loop” and “Add CSV import”",
    "Fix login redirect loop, Add CSV import", "Not Fix login redirect loop", "Fix login redirect loop is not the newest",
    "The oldest issue is Fix login redirect loop", "", "n/a", "none", "Add CSV import", "Issue #12",
    "Fix login redirect loop v2", "Maybe Fix login redirect loop", "Either Fix login redirect loop or something else",
    "Fix login redirect loop / Add CSV import", "Fix logout redirect loop", "Fix login redirect loop (or Add CSV import)",
    "Fix\nlogin redirect loop\nAdd CSV import", "All issues: Fix login redirect loop; Add CSV import",
    "FixLoginRedirectLoop", "The newest issue is not “Fix login redirect loop”", "Fix login redirect loop, probably",
    "Fix login redirect loop Fix login redirect loop", "I could not find Fix login redirect loop",
    "Fix login redirect loop and Fix logout redirect loop", "Fix login redirect loop? or Add CSV import?",
])

SET = (["red", "navy blue", "olive"], "colors", [
    "red, navy blue, olive", "Olive, Red, Navy Blue", "red, navy blue and olive", "red, navy blue, and olive",
    "red; navy blue; olive", "red\nnavy blue\nolive", "- red\n- navy blue\n- olive", "1. red 2. navy blue 3. olive",
    "It comes in red, navy blue and olive.", "The colors are red, navy blue and olive.", "Colors: red, navy blue, olive",
    "“red”, “navy blue”, “olive”", "red / navy blue / olive", "red & navy blue & olive", "Red, Navy Blue, Olive.",
    "olive, red, navy blue", "navy blue, olive, red", "It is available in red, navy blue and olive",
    "Available colors: red, navy blue, olive", "red,navy blue,olive", "RED, NAVY BLUE, OLIVE", "red, olive and navy blue",
    "• red • navy blue • olive", "Red, navy blue and olive are available", "red + navy blue + olive",
    "[red, navy blue, olive]", "red | navy blue | olive", "red, navy blue, olive — that's all",
    "The product is available in the following colors: red, navy blue, olive", "**red**, **navy blue**, **olive**",
], [
    "red, navy blue", "red, blue, olive", "red, navy, olive", "red, navy blue, olive, black", "red, navy blue, olive, blue",
    "red, light navy blue, olive", "red, navy blue, olive green", "all colors", "", "n/a", "red",
    "red, navy blue, olive, not black", "every color: red, navy blue, olive, black, white, green", "red and olive",
    "navy blue", "red, red, olive", "reddish, navy blue, olive", "red, navy blue, olive (not sure about olive)",
    "No colors", "It is only available in black", "maroon, navy blue, olive", "red, navy blue, olive, and more",
    "red, navy blue, olive, etc.", "red, navy blue, olive? or black?", "red navy blue olive black", "colors unknown",
    "red, navy blue, olive, white", "dark red, navy blue, olive", "red, navy blue, olive, beige, black, blue, brown, "
    "charcoal, cream, gray, green, khaki, maroon, pink, purple, tan, teal, white, yellow", "none of them",
])

NUMBERS = ([3, 4, 5], "posts per category", [
    "3, 4, 5", "3,4,5", "3; 4; 5", "3, 4 and 5", "3 4 5", "3\n4\n5", "Design: 3, Engineering: 4, Travel: 5",
    "3 posts, 4 posts and 5 posts", "3,4,5.", "(3, 4, 5)", "[3,4,5]", "3 / 4 / 5", "The counts are 3, 4 and 5.",
    "3, 4, 5 (in that order)", "first 3, then 4, then 5", "3 | 4 | 5", "3-4-5", "3 · 4 · 5", "3 – 4 – 5",
    "Design - 3, Engineering - 4, Travel - 5", "Counts: 3,4,5", "3,4,5 posts respectively",
    "They have 3, 4 and 5 published posts.", "**3**, **4**, **5**", "3 then 4 then 5", "3 & 4 & 5",
    "3 and 4 and 5", "3, 4, 5 as of Mar 5, 2026", "03, 04, 05", "three, four, five",
], [
    "3, 5, 4", "5, 4, 3", "345", "3,4", "3, 4, 5, 6", "3, 4, 5 (total 12)", "12", "3, 4, -5", "Design: -3, 4, 5",
    "3.5, 4, 5", "1 2 3 4 5", "0, 1, 2, 3, 4, 5, 6", "3,45", "34,5", "3, 4", "4, 4, 5", "", "n/a", "3, 4, 5, 3, 4, 5",
    "30, 40, 50", "3, 4, 5.5", "3, 4 and maybe 6", "2, 4, 5", "3, 4, 5 or 6", "-3, -4, -5", "3,4,5,6,7,8,9",
    "3k, 4, 5", ALL_UP_TO_400, "3, 4, 5 thousand", "4, 3, 5",
])

CASES = {"number": NUMBER, "percent": PERCENT, "money": MONEY, "date": DATE, "text": TEXT, "set": SET, "numbers": NUMBERS}


def _paid(kind: str, answer: str) -> bool:
    expected, label, _, _ = CASES[kind]
    return answer_check(kind, answer, expected, label)["passed"]


@pytest.mark.parametrize("kind", sorted(CASES))
def test_each_answer_type_has_thirty_phrasings_each_way(kind):
    _, _, right, wrong = CASES[kind]
    assert len(set(right)) >= 30 and len(set(wrong)) >= 30


@pytest.mark.parametrize("kind,answer", [(k, a) for k, c in CASES.items() for a in c[2]])
def test_a_right_answer_as_users_write_it_is_paid(kind, answer):
    assert _paid(kind, answer), answer


@pytest.mark.parametrize("kind,answer", [(k, a) for k, c in CASES.items() for a in c[3]])
def test_a_wrong_answer_as_users_write_it_is_not_paid(kind, answer):
    assert not _paid(kind, answer), answer


def test_a_dash_after_a_label_is_no_minus_sign_but_a_touching_one_is():
    from simweb.judging.verify import match_number, numbers_in

    assert numbers_in("Total - 382") == [382.0] and numbers_in("Total -382") == [-382.0]
    assert match_number("Score: -3", -3) and match_number("score (-3)", -3) and not match_number("Score - 3", -3)


def test_commas_read_as_the_question_asks():
    """"3,4,5" is three numbers where three are asked for, "1,234" one where one is."""
    from simweb.judging.verify import match_number, match_numbers

    assert match_numbers("3,4,5", [3, 4, 5]) and not match_number("3,4,5", 345)
    assert match_number("1,234", 1234) and match_numbers("1,234", [1234]) and match_numbers("1,234", [1, 234])
    assert not match_numbers("1,234", [1, 2, 34])
