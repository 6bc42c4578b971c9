import HomeportHTTP
import HomeportWire

/// The rules for an FCM registration token a device registers.
package enum FCMRegistration {
    /// The prefix of the name the server gives a registration (`fcm:` and 64 hex digits).
    static let tokenPrefix = "fcm:"

    /// The server's name for the registration `token`: `fcm:` and its SHA-256, in hex (the token
    /// is the device's address at FCM: it never goes in a path or a log).
    package static func name(token: String) -> String {
        DeviceName.make(tokenPrefix, token)
    }

    /// Whether `text` is such a name.
    package static func isName(_ text: String) -> Bool {
        DeviceName.isName(text, prefix: tokenPrefix)
    }

    /// Whether `token` can be an FCM registration token: 20 to 4096 characters of letters,
    /// digits, `-`, `_`, `:` and `.`.
    package static func isToken(_ token: String) -> Bool {
        (20...4096).contains(token.utf8.count)
            && token.utf8.allSatisfy {
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0)
                    || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                    || [UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: ":"), UInt8(ascii: ".")].contains($0)
            }
    }

    /// The registration of `token` as the server keeps it (named by its SHA-256, the token in
    /// `endpoint`), or the 400 that names the `token` field.
    package static func registration(token: String?) throws -> PushDeviceRegistration {
        guard let token, isToken(token) else {
            throw HTTPError.invalidField(
                "token", "An FCM registration token is 20 to 4096 letters, digits, '-', '_', ':' or '.'.")
        }
        var registration = PushDeviceRegistration(fcmToken: name(token: token))
        registration.endpoint = token
        return registration
    }
}
