import HomeportWire

/// A notification for one account: what the in-app stream shows and each of the account's
/// devices receives as a push (``PushCenter/notify(_:to:in:)``).
public struct ProductNotification: Sendable, Hashable {
    /// Its code in the server's catalogue (`bookorbit:loan.ready`).
    public var code: String
    /// Its title: 1–200 characters, without control, bidirectional or invisible formatting ones.
    public var title: String
    /// Its body: at most 2000 characters (line breaks allowed).
    public var body: String?
    /// The thread it joins (`loan:42`): 1–128 characters of letters, digits and `:._-`; the
    /// account can mute it.
    public var thread: String?
    /// The id of what it is about, for the app to open.
    public var objectID: Int64?
    /// A push with the same collapse id replaces the one before it on the device.
    public var collapseID: String?
    /// The product's own string values for the app (`NotificationData`): `d` in the push's app
    /// data, `data` on the stream.
    public var data: [String: String]?

    /// A notification.
    public init(
        code: String, title: String, body: String? = nil, thread: String? = nil, objectID: Int64? = nil,
        collapseID: String? = nil, data: [String: String]? = nil
    ) {
        self.code = code
        self.title = title
        self.body = body
        self.thread = thread
        self.objectID = objectID
        self.collapseID = collapseID
        self.data = data
    }
}

/// Whether text may be shown in a notification's title or body (`DisplayText.isShown(_:)`):
/// a product checks what a person typed before it becomes one.
public typealias DisplayText = HomeportWire.DisplayText
