import Foundation
import HomeportCrypto

/// What a person's authenticator app shows, for tests that sign in with a second factor.
public enum AuthenticatorApp {
    /// The TOTP code of `secret` (base32, as a setup's `secret` gives it) for the current
    /// 30-second step plus `steps`; `nil` for a secret that is not base32.
    public static func code(secret: String, steps: Int64 = 0) -> String? {
        guard let key = Base32.decode(secret) else { return nil }
        return OneTimeCode.code(secret: key, step: OneTimeCode.step(at: Int64(Date().timeIntervalSince1970)) + steps)
    }
}
