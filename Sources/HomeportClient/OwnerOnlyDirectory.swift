import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A directory that holds credentials, or the records that say where they may go: it belongs to
/// the user running the client and nobody else can write to it.
enum OwnerOnlyDirectory {
    /// Creates `path` with mode 0700 when it does not exist, and so every missing parent (whatever
    /// the umask: `mkdir` is given 0700, which a umask can only narrow). An existing directory is
    /// used as it is when it belongs to this user and neither its group nor others can write to
    /// it; otherwise it is refused. The mode of an existing directory is never changed (it may be
    /// shared, or somebody else's).
    static func prepare(_ path: String) throws {
        if !FileManager.default.fileExists(atPath: path) {
            var missing: [String] = []
            var next = path
            while !next.isEmpty, next != "/", !FileManager.default.fileExists(atPath: next) {
                missing.append(next)
                next = (next as NSString).deletingLastPathComponent
            }
            for directory in missing.reversed() where mkdir(directory, 0o700) != 0 && errno != EEXIST {
                throw ClientError.unsafeDirectory(
                    path: directory, reason: "it cannot be created (\(String(cString: strerror(errno))))")
            }
        }
        try check(path)
    }

    /// Opens `path`, a file that holds a secret, for reading: it must be a regular file (not a
    /// link to one), belong to this user, and be readable and writable by nobody else. Returns
    /// its descriptor, or `nil` when it does not exist.
    static func openSecret(_ path: String) throws -> Int32? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            let reason = errno == ELOOP ? "it is a symbolic link" : String(cString: strerror(errno))
            throw ClientError.unsafeDirectory(path: path, reason: "it cannot be used as a secret (\(reason))")
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            close(fd)
            throw ClientError.unsafeDirectory(path: path, reason: "it cannot be read")
        }
        let mode = UInt32(info.st_mode)
        let reason: String? =
            if mode & UInt32(S_IFMT) != UInt32(S_IFREG) {
                "it is not a regular file"
            } else if info.st_uid != geteuid() {
                "it is owned by another user (uid \(info.st_uid))"
            } else if mode & 0o077 != 0 {
                "others can read or write it (mode \(String(mode & 0o7777, radix: 8))); make it 0600"
            } else {
                nil
            }
        if let reason {
            close(fd)
            throw ClientError.unsafeDirectory(path: path, reason: reason)
        }
        return fd
    }

    /// Refuses a path that is not a directory of this user that only this user can write.
    static func check(_ path: String) throws {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw ClientError.unsafeDirectory(
                path: path, reason: "it cannot be read (\(String(cString: strerror(errno))))")
        }
        let mode = UInt32(info.st_mode)
        guard mode & UInt32(S_IFMT) == UInt32(S_IFDIR) else {
            throw ClientError.unsafeDirectory(path: path, reason: "it is not a directory")
        }
        guard info.st_uid == geteuid() else {
            throw ClientError.unsafeDirectory(
                path: path,
                reason: "it is owned by another user (uid \(info.st_uid)), who could read or replace what is kept there"
            )
        }
        guard mode & 0o022 == 0 else {
            throw ClientError.unsafeDirectory(
                path: path,
                reason:
                    "others can write to it (mode \(String(mode & 0o7777, radix: 8))), so they could replace what is kept there"
            )
        }
    }
}
