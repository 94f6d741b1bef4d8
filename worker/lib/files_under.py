def files_under(top):
    """(path, name, lstat) of each file below `top` (os.walk's names; a link
    is not followed): a file gone between the listing and its lstat is left
    out."""
    for folder, dirs, names in os.walk(top):
        for name in names:
            path = os.path.join(folder, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            yield path, name, st
