import Foundation

/// The public identifier of one Homeport installation: a UUID written in lowercase.
///
/// The server stores it once, in its database, and every replica answers the same value.
/// Clients key servers by it and compare it before sending a credential to an address.
public struct InstanceID: Hashable, Sendable, CustomStringConvertible {
    /// The UUID this identifier wraps.
    public let uuid: UUID

    /// Wraps a UUID.
    public init(_ uuid: UUID) {
        self.uuid = uuid
    }

    /// Parses the textual form; `nil` unless `string` is a UUID.
    ///
    /// Uppercase input is accepted and normalised; the wire form is always lowercase. Only the
    /// canonical spelling (8-4-4-4-12 hex digits) is a UUID: no sign, space or `0x` before a group.
    public init?(_ string: String) {
        guard UUIDText.isCanonical(string), let uuid = UUID(uuidString: string) else { return nil }
        self.uuid = uuid
    }

    /// The lowercase UUID string sent on the wire.
    public var description: String { uuid.uuidString.lowercased() }
}

extension InstanceID: Codable {
    /// Decodes a UUID string; anything else is a decoding error.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let parsed = InstanceID(text) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "instanceId is not a UUID: \(text.prefix(64))")
        }
        self = parsed
    }

    /// Encodes the lowercase UUID string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
