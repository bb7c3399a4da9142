"""magpie plugin: AMD's ATOM serving framework."""
