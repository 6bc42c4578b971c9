import Foundation

/// What names a server in the client's calls: its handle (``ServerRecord/localID``, a `UUID`
/// fixed at enrolment), its record, or its key (``ServerRecord/key``) exactly as the client gave
/// it. An app keeps the handle: it stays the same when the server's identity is reset and its key
/// changes.
///
/// A prefix, a label or a URL names no server here: those are the command line's conveniences,
/// which it resolves itself before it calls the client.
public protocol ServerReference: Sendable {
    /// The stored record this names in `directory`; throws ``ClientError/unknownServer(_:)``
    /// when it names none.
    func record(in directory: ServerDirectory) throws -> ServerRecord
}

extension UUID: ServerReference {
    /// The server whose handle this is.
    public func record(in directory: ServerDirectory) throws -> ServerRecord {
        guard let record = directory.server(self) else { throw ClientError.unknownServer(uuidString) }
        return record
    }
}

extension ServerRecord: ServerReference {
    /// The record stored now under this record's handle (its key may have changed since this copy
    /// was read). A copy of a server no longer stored (removed, or never saved) names nothing:
    /// its addresses and its key are not trusted, nor any token kept under that key.
    public func record(in directory: ServerDirectory) throws -> ServerRecord {
        guard let record = directory.server(localID) else { throw ClientError.unknownServer(key) }
        return record
    }
}

extension String: ServerReference {
    /// The server whose handle this is in text, or with this key (a handle first: both read
    /// as UUIDs, and a server chooses its own id).
    public func record(in directory: ServerDirectory) throws -> ServerRecord {
        if let handle = UUID(uuidString: self), let record = directory.server(handle) { return record }
        if let record = directory.server(self) { return record }
        throw ClientError.unknownServer(ServerText.clean(self, limit: 80))
    }
}
