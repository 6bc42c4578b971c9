import Foundation
import HomeportWire

/// The device's push token and, per server, the registration made there, persisted as JSON with
/// write-then-rename (`push-devices.json`, 0600, next to the server directory); every change is a
/// read-modify-write under a lock every process using the directory takes.
///
/// The per-server record is what lets the client unregister the right token before it signs out,
/// and replace an old token when the device's changes.
public final class DeviceRegistry: Sendable {
    /// The file.
    public var path: String { file.path }
    private let file: SharedJSONFile<Stored>

    struct Stored: Codable, Equatable, Sendable {
        var device: PushDeviceRegistration?
        var servers: [String: PushDeviceRegistration] = [:]
    }

    /// Loads `directory/push-devices.json` (empty when it does not exist); the directory must be
    /// one only this user can write. A change waits at most `lockTimeout` for another process.
    public init(directory: String, lockTimeout: Duration = .seconds(10)) throws {
        try OwnerOnlyDirectory.prepare(directory)
        file = try SharedJSONFile(
            path: directory + "/push-devices.json", empty: Stored(), what: "the push device file",
            lockTimeout: lockTimeout)
    }

    /// The device's current token, registered with every server signed in on.
    public var device: PushDeviceRegistration? { file.value.device }

    /// The registration made with `server`, if any.
    public func registration(for server: String) -> PushDeviceRegistration? { file.value.servers[server] }

    /// Every server with a registration.
    public var servers: [String: PushDeviceRegistration] { file.value.servers }

    func setDevice(_ device: PushDeviceRegistration?) throws {
        try file.change { $0.device = device }
    }

    func record(_ registration: PushDeviceRegistration?, for server: String) throws {
        try file.change { $0.servers[server] = registration }
    }

    /// Moves `old`'s registration to `new` (the server is kept under another key now).
    func move(_ old: String, to new: String) throws {
        try file.change { stored in
            guard old != new, let registration = stored.servers.removeValue(forKey: old) else { return }
            stored.servers[new] = registration
        }
    }
}

/// APNs device tokens as Homeport takes them: hex, an even number of 16–200 digits, lowercase.
public enum PushDeviceToken {
    /// `text` as a token (lowercased), or `nil` when it is not one.
    public static func normalized(_ text: String) -> String? {
        let token = text.trimmingCharacters(in: .whitespaces).lowercased()
        guard (16...200).contains(token.utf8.count), token.utf8.count % 2 == 0,
            token.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
        else { return nil }
        return token
    }

    /// The hex form of a token as Apple hands it to an app (`Data`).
    public static func hex(_ data: Data) -> String {
        data.map { String(format: "%02x", $0) }.joined()
    }
}
