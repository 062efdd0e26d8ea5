"""The verification report: the document and its sections (``document``), the verdict cells
(``cells``), the HTML page (``html``), the Python view of a written report (``view``), the
difference between two reports (``diff``), the report directory (``directory``) and the one
figure style (``plotting``)."""
