import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A directory that holds credentials, or the records that say where they may go: it belongs to
/// the user running the client and nobody else can write to it.
enum OwnerOnlyDirectory {
    /// Creates `path` with mode 0700 when it does not exist (missing parents get the usual mode).
    /// An existing directory is used as it is when it belongs to this user and neither its group
    /// nor others can write to it; otherwise it is refused. The mode of an existing directory is
    /// never changed (it may be shared, or somebody else's).
    static func prepare(_ path: String) throws {
        if !FileManager.default.fileExists(atPath: path) {
            let parent = (path as NSString).deletingLastPathComponent
            if !parent.isEmpty {
                try? FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
            }
            if mkdir(path, 0o700) != 0 && errno != EEXIST {
                throw ClientError.unsafeDirectory(
                    path: path, reason: "it cannot be created (\(String(cString: strerror(errno))))")
            }
        }
        try check(path)
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
