"""What ``scan`` shows, as data: which sessions in which order (select.py), grouped and charted
(groups.py), and how wide each cell is on a terminal (width.py, layout.py). The CLI renders; nothing
here prints, reads a session file or names a tool (docs/scan-show.md)."""
