"""The locations as the admin and the readers see them: rows, levels per place, transfers.
Reads and writes outside a batch's hold; what a batch reads and writes is storage/'s.

    book.py  LocationBook: the location rows, a goods id's levels per place, a transfer
"""

from stock_service.locations.book import LocationBook

__all__ = ["LocationBook"]
