"""magpie plugin: the SGLang serving framework."""
