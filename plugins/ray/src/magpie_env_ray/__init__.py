"""magpie's ``ray`` execution environment."""
