"""Measurement: verdict statistics (:mod:`.stats`), timing (:mod:`.timing`), worker processes (:mod:`.worker`)."""
