"""GNU sort's ordering options of text lines, as one ``TypedDict``: :class:`OrderOptions`."""

import os
from typing import Optional, Sequence, TypedDict, Union


class OrderOptions(TypedDict, total=False):
    """GNU sort's ordering options of text lines (format ``lines``), as keywords.

    Each is named after GNU sort's long option, ``-`` written ``_``, and is
    optional. :func:`emsort.sort`, :func:`emsort.merge_files`,
    :class:`emsort.Sorter`, :class:`emsort.LineOrder` and
    :func:`emsort.ray.sort` take them as keywords (``**order``); the output is
    ``LC_ALL=C sort``'s with the same options, byte for byte (with ``locale``,
    that locale's ``sort``'s)::

        emsort.sort("sales.csv", "by-amount.csv", key="3,3n", field_separator=",")
        # = LC_ALL=C sort -t, -k3,3n sales.csv -o by-amount.csv

        order: emsort.OrderOptions = {"key": ["2,2", "3,3nr"], "unique": True}
        emsort.merge_files(parts, "merged.csv", field_separator=",", **order)

    Keys:
        key: ``-k``: one key spec (``"2,2"``, ``"3,3nr"``, ``"1.3b,1.5"``) or a
            list of them, compared in turn; fields count from 1.
        field_separator: ``-t``: the byte between fields (``","``, ``b"\\t"``,
            ``"\\0"``); default: fields start at a blank after a non-blank.
        ignore_leading_blanks: ``-b``.
        dictionary_order: ``-d``: only blanks and alphanumerics.
        ignore_case: ``-f``: lower case folded to upper case.
        general_numeric_sort: ``-g``: as ``strtold`` reads numbers.
        human_numeric_sort: ``-h``: ``2K`` < ``1G``.
        ignore_nonprinting: ``-i``: only printable bytes.
        month_sort: ``-M``: ``JAN`` < … < ``DEC``.
        numeric_sort: ``-n``: by the leading number (``-`` sign, ``.`` decimal point).
        random_sort: ``-R``: a shuffle that keeps equal keys together.
        random_source: ``--random-source``: the file whose first 16 bytes salt
            ``-R`` (default: random bytes from the kernel).
        version_sort: ``-V``: version numbers within text.
        stable: ``-s``: no last-resort comparison of whole lines (lines equal
            by their keys keep their input order).
        unique: ``-u``: only the first line of each group of equal lines (by
            the keys, when there are keys).
        zero_terminated: ``-z``: lines end with NUL, not newline.
        csv: ``emsort sort --csv``: lines are CSV records (RFC 4180: a quoted
            field may hold separators, ``""`` and newlines, so a record may span
            lines); keys take the fields' unquoted values; ``field_separator``
            sets the separator (default ``","``).
        header: ``emsort sort --header``: each input file's first line (record)
            is a header: the first one's is written first, the others' must be
            the same, none is sorted; a ``key`` may then name a column
            (``"amount"``, ``"amount:nr"``: the whole field, with the key
            spec's letters). :class:`emsort.Sorter` takes its first pushed line
            as the header, with keys by number only.
        jsonl: ``--jsonl``: each line is one JSON value, ordered as jq's
            ``sort_by`` orders values; ``key`` then takes paths with
            modifiers (``".ts:n"``, ``".user.name"``, ``".tags[0]:r"``), the
            whole value without one; ``reverse``, ``stable`` and ``unique``
            apply; a line that is not JSON raises ``emsort.EmsortError`` naming the
            file and line (``events.jsonl:17: invalid JSON: …``).
        locale: the locale to order in. ``None`` (the default): bytewise, the C
            locale's order, as Python's ``sorted`` and Polars order; a name
            (``"en_US.UTF-8"``, ``"sv_SE.UTF-8"``): that locale, as
            ``LC_ALL=en_US.UTF-8 sort`` orders (collation, ``-f``/``-d``/``-i``'s
            character classes, ``-n``'s decimal point and thousands separator,
            ``-M``'s month names); ``""``: the environment's (``LC_ALL``, else
            ``LC_COLLATE`` …, else ``LANG``), as the ``emsort`` command and GNU
            sort take it. A locale the C library cannot load (not generated:
            see ``locale -a``) raises ``ValueError`` naming it.

    ``reverse`` (``-r``) is a keyword of its own, since every format takes it:
    for lines, it is the global ``-r`` that keys without modifiers of their
    own inherit. GNU's rules hold: the flags are global options, which a key
    with modifiers of its own (``"2,2n"``) does not take; options GNU sort
    refuses together raise ``ValueError`` with its message (``numeric_sort``
    and ``general_numeric_sort``: "options '-gn' are incompatible"), as do a
    bad key spec (``key="0"``), a ``field_separator`` of more than one byte,
    and any of these options with a format other than ``lines``. A keyword
    that is not one of them, or a value of the wrong type (``key=len``,
    ``unique=1``), raises ``TypeError``.
    """

    key: Union[str, Sequence[str], None]
    field_separator: Union[str, bytes, None]
    ignore_leading_blanks: bool
    dictionary_order: bool
    ignore_case: bool
    general_numeric_sort: bool
    human_numeric_sort: bool
    ignore_nonprinting: bool
    month_sort: bool
    numeric_sort: bool
    random_sort: bool
    random_source: Union[str, os.PathLike[str], None]
    version_sort: bool
    stable: bool
    unique: bool
    zero_terminated: bool
    csv: bool
    header: bool
    jsonl: bool
    locale: Optional[str]
