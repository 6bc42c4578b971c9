import Foundation

/// An invitation as both command lines list it (`homeport-server invites list`, `homeport
/// invites list`): `ID  ADDRESS|anyone [groups A,B]  STATE`, the state being `revoked`, `used`,
/// `expired` or how many sign-ups are left until when.
public enum InvitationLine {
    /// The line of one invitation, at `now` (Unix seconds).
    public static func text(
        id: Int64, email: String?, groups: [String], usesLeft: Int64, expiresAt: Int64, revoked: Bool, now: Int64
    ) -> String {
        let state =
            revoked
            ? "revoked"
            : usesLeft == 0 ? "used" : expiresAt <= now ? "expired" : "\(usesLeft) left, until \(date(expiresAt))"
        let named = groups.isEmpty ? "" : " groups " + groups.joined(separator: ",")
        return "\(id)  \(email ?? "anyone")\(named)  \(state)"
    }

    /// `seconds` since 1970 as ISO 8601, in UTC.
    public static func date(_ seconds: Int64) -> String {
        ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }
}
