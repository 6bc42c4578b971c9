import Foundation
import HomeportWire
import Synchronization

/// The device's push token and, per server, the registration made there, persisted as JSON with
/// write-then-rename (`push-devices.json`, 0600, next to the server directory).
///
/// The per-server record is what lets the client unregister the right token before it signs out,
/// and replace an old token when the device's changes.
public final class DeviceRegistry: Sendable {
    /// The file.
    public let path: String
    private let state: Mutex<Stored>

    private struct Stored: Codable, Equatable {
        var device: PushDeviceRegistration?
        var servers: [String: PushDeviceRegistration] = [:]
    }

    /// Loads `directory/push-devices.json` (empty when it does not exist); the directory must be
    /// one only this user can write.
    public init(directory: String) throws {
        try OwnerOnlyDirectory.prepare(directory)
        path = directory + "/push-devices.json"
        var stored = Stored()
        if let data = FileManager.default.contents(atPath: path) {
            do {
                stored = try JSONDecoder().decode(Stored.self, from: data)
            } catch {
                throw ClientError.badAnswer(address: path, detail: "the push device file is damaged: \(error)")
            }
        }
        state = Mutex(stored)
    }

    /// The device's current token, registered with every server signed in on.
    public var device: PushDeviceRegistration? { state.withLock { $0.device } }

    /// The registration made with `server`, if any.
    public func registration(for server: String) -> PushDeviceRegistration? {
        state.withLock { $0.servers[server] }
    }

    /// Every server with a registration.
    public var servers: [String: PushDeviceRegistration] { state.withLock { $0.servers } }

    func setDevice(_ device: PushDeviceRegistration?) throws {
        try change { $0.device = device }
    }

    func record(_ registration: PushDeviceRegistration?, for server: String) throws {
        try change { $0.servers[server] = registration }
    }

    /// Moves `old`'s registration to `new` (the server is kept under another key now).
    func move(_ old: String, to new: String) throws {
        try change { stored in
            guard old != new, let registration = stored.servers.removeValue(forKey: old) else { return }
            stored.servers[new] = registration
        }
    }

    private func change(_ body: (inout Stored) -> Void) throws {
        try state.withLock { stored in
            let before = stored
            body(&stored)
            guard stored != before else { return }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try AtomicFile.write(try encoder.encode(stored), to: path)
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
