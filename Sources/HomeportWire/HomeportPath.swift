/// The paths of the Homeport API, defined once for server and client.
public enum HomeportPath {
    /// The prefix of the app's own API: every route under it takes the session token from the
    /// header only, and needs a signed-in session unless the protocol says otherwise.
    public static let apiPrefix = "/api/v1"
    /// `GET`: the public, credential-free identity of the installation.
    public static let serverIdentity = apiPrefix + "/server-identity"
    /// `GET`: what the server is and can do; needs a signed-in session.
    public static let appInfo = apiPrefix + "/app-info"
    /// `GET`: the signed-in account: its id, address, groups and stage.
    public static let account = apiPrefix + "/account"
    /// `GET`: the sign-ups waiting or held (the `admin` group only); `POST
    /// adminSignups/{id}/approve|hold|reject` decides one.
    public static let adminSignups = apiPrefix + "/admin/signups"
    /// `POST`: an invitation from the app (``InvitationRequest``; 201 ``InvitationAnswer``);
    /// `GET`: the account's own (``InvitationListAnswer``); `DELETE invitations/{id}` revokes one.
    public static let invitations = apiPrefix + "/invitations"
    /// `GET`: what a pre-login session earned on its last attempt to get in.
    public static let authStanding = apiPrefix + "/auth/standing"
    /// `GET`: forward auth for a reverse proxy in front of a product in any language: 200 with
    /// the account in ``HomeportHeader/accountID`` and its siblings for a signed-in session
    /// token, the API's 401 for anything else.
    public static let authForward = apiPrefix + "/auth/forward"
    /// `POST`: register the caller's device token for pushes.
    public static let pushDevices = apiPrefix + "/push/devices"
    /// `DELETE pushDevices/{token}`: unregister a device token.
    public static func pushDevice(_ token: String) -> String { pushDevices + "/" + token }
    /// `GET`: the server's VAPID public key, for a Web Push subscription.
    public static let pushWebPushKey = apiPrefix + "/push/webpush-key"
    /// `POST`: send one test notification to the caller's own devices.
    public static let pushTest = apiPrefix + "/push/test"
    /// `GET`: the server's notification catalogue (`ETag`, 304 on `If-None-Match`).
    public static let notificationsCatalogue = apiPrefix + "/notifications/catalogue"
    /// `GET`: the threads the account muted.
    public static let notificationsMutes = apiPrefix + "/notifications/mutes"
    /// `PUT`, `DELETE`: mute or unmute one thread (the server's own thread id, such as `chat:42`).
    public static func notificationsMute(_ thread: String) -> String { notificationsMutes + "/" + thread }
    /// `GET`: server-sent events of the account's notifications (`Last-Event-ID` resumes).
    public static let notificationsStream = apiPrefix + "/notifications/stream"
}

/// The header fields of the Homeport protocol.
public enum HomeportHeader {
    /// The session token of a native app, on every request (PROTOCOL §2).
    public static let sessionToken = "X-Session-Token"
    /// The password-reset key of `GET auth/password/reset` on the app door.
    public static let passwordResetKey = "X-Password-Reset-Key"
    /// The verification code of `GET auth/email/verify` on the app door.
    public static let emailVerificationKey = "X-Email-Verification-Key"
    /// Forward auth's answer, which a reverse proxy copies onto the request it passes on: the
    /// signed-in account's id.
    public static let accountID = "X-Homeport-Account-Id"
    /// Forward auth's answer: the signed-in account's sign-in address.
    public static let accountEmail = "X-Homeport-Account-Email"
    /// Forward auth's answer: a name for the session that is not a secret (the same for every
    /// request of the session, useless as a credential).
    public static let sessionHandle = "X-Homeport-Session"
    /// Forward auth's answer: `true` when the account's address is verified, else `false`. An
    /// address that is not verified says nothing of who reads its mail: never share by it.
    public static let accountEmailVerified = "X-Homeport-Account-Email-Verified"
    /// Forward auth's answer: the account's groups, comma-separated and sorted (`admin,family`);
    /// empty for none.
    public static let accountGroups = "X-Homeport-Groups"

    /// Every field forward auth answers, which a site copies onto the product's requests (and
    /// removes from what a client sent, in every spelling).
    public static let forwardAuthFields = [accountID, accountEmail, accountEmailVerified, sessionHandle, accountGroups]
}

/// The app door: django-allauth headless's app-client API, whose paths Homeport shares.
public enum AllauthAppPath {
    /// The base path; every endpoint below is relative to it.
    public static let base = "/_allauth/app/v1"
    /// `GET`: what the server offers (login methods, whether sign-up is open).
    public static let config = "config"
    /// `POST`: create an account.
    public static let signup = "auth/signup"
    /// `POST`: sign in with an address and a password.
    public static let login = "auth/login"
    /// `GET`: the session's state; `DELETE`: sign out.
    public static let session = "auth/session"
    /// `POST`: change the password (the token rotates).
    public static let passwordChange = "account/password/change"
    /// `GET`: the account's addresses (on Homeport, its one sign-in address).
    public static let emailAddresses = "account/email"
    /// `POST`: delete the signed-in account, confirmed with its password (Homeport's own
    /// endpoint; allauth's headless API has none).
    public static let accountDelete = "account/delete"
    /// `POST`: mail a password-reset key.
    public static let passwordResetRequest = "auth/password/request"
    /// `GET`: check a reset key; `POST`: set a new password with it.
    public static let passwordReset = "auth/password/reset"
    /// `GET`: check a mailed verification code; `POST`: verify the address with it.
    public static let emailVerify = "auth/email/verify"
    /// `POST`: mail a new verification code.
    public static let emailVerifyResend = "auth/email/verify/resend"
    /// `POST`: confirm the password again before changing the account's second factor.
    public static let reauthenticate = "auth/reauthenticate"
    /// `POST`: complete a sign-in that waits for its second factor (`mfa_authenticate`), with a
    /// TOTP code or a recovery code.
    public static let twoFactorAuthenticate = "auth/2fa/authenticate"
    /// `POST`: confirm the second factor again before changing it.
    public static let twoFactorReauthenticate = "auth/2fa/reauthenticate"
    /// `GET`: the account's authenticators.
    public static let authenticators = "account/authenticators"
    /// `GET`: the TOTP authenticator, or (404) a new secret to set one up; `POST`: activate it
    /// with a code; `DELETE`: turn it off.
    public static let totp = "account/authenticators/totp"
    /// `GET`: the recovery codes (their list only the first time); `POST`: make new ones.
    public static let recoveryCodes = "account/authenticators/recovery-codes"
    /// `GET`: options to add a passkey (`?passwordless` for one that signs in alone); `POST`: add
    /// it (`name`, `credential`); `PUT`: rename one (`id`, `name`); `DELETE`: remove some
    /// (`authenticators`: their ids).
    public static let webAuthn = "account/authenticators/webauthn"
    /// `GET`: options to sign in with a passkey; `POST`: sign in with one (`credential`).
    public static let webAuthnLogin = "auth/webauthn/login"
    /// `GET`: options for the passkey a sign-in waits for as its second factor; `POST`: sign in
    /// with it (`credential`).
    public static let webAuthnAuthenticate = "auth/webauthn/authenticate"
    /// `GET`: options to confirm a signed-in session with a passkey; `POST`: confirm it.
    public static let webAuthnReauthenticate = "auth/webauthn/reauthenticate"
    /// `POST`: sign up with a passkey and no password (`email`, and `invitation`, Homeport's
    /// own); once the address's code is in, `GET`: options to create the passkey; `PUT`: create
    /// it (`name`, `credential`), which signs in.
    public static let webAuthnSignup = "auth/webauthn/signup"
    /// `POST`: sign in (or connect) with an identity provider's ID token the app obtained itself.
    public static let providerToken = "auth/provider/token"
    /// `GET`, `POST`: the sign-up a provider sign-in waits on, when its address is taken.
    public static let providerSignup = "auth/provider/signup"
    /// `GET`, `DELETE`: the account's linked provider accounts.
    public static let providerAccounts = "account/providers"
    /// `POST`: ask for a browser sign-in handed to this app (Homeport's own extension).
    public static let handoff = "auth/handoff"
    /// `POST`: exchange a handoff's code and the app's verifier for a session.
    public static let handoffToken = "auth/handoff/token"

    /// The absolute path of an endpoint: `/_allauth/app/v1/<endpoint>`.
    public static func path(_ endpoint: String) -> String {
        base + "/" + endpoint
    }
}
