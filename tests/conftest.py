collect_ignore_glob = ["data/*"]
