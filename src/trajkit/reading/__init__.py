"""The reader toolkit: what every format's reader is built from.

- :mod:`.io`: the one capped whole-file read (regular files only, size
  checked before reading), file heads, JSON and JSON Lines with located
  diagnostics;
- :mod:`.fs`: the one filesystem seam (listings, ``stat``, "a file / a
  folder"): the operating system, or a run archive's members held in
  memory while ``trajkit index`` reads them; :mod:`.io`, :mod:`.probe` and
  :mod:`.tree` look at files through it, and so do the readers;
- :mod:`.probe`: the cached filesystem view detection hands to ``sniff``;
- :mod:`.builder`: :class:`~.builder.SessionBuilder`, file accounting and
  diagnostics with the file filled in, and a completeness check;
- :mod:`.pairing`: the default step builders (calls paired with results by
  call id, or by cause).

Import the submodules (``from trajkit.reading.io import read_capped``); this
package imports nothing, so a reader pays only for what it uses. (It is not
called ``read``: that name is the library function ``trajkit.read``.)
"""
