"""Every job in one shape: ``plan(request)``, then ``finish(plan, reply)`` (see ``base``)."""
