import datetime

from google.api import field_behavior_pb2 as _field_behavior_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from messaging.v1 import flow_responses_pb2 as _flow_responses_pb2
from messaging.v1 import messages_pb2 as _messages_pb2
from messaging.v1 import opt_outs_pb2 as _opt_outs_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class MessageEvent(_message.Message):
    __slots__ = ("id", "type", "created_at", "data")
    ID_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    id: str
    type: str
    created_at: _timestamp_pb2.Timestamp
    data: MessageEventData
    def __init__(self, id: _Optional[str] = ..., type: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., data: _Optional[_Union[MessageEventData, _Mapping]] = ...) -> None: ...

class MessageEventData(_message.Message):
    __slots__ = ("message_id", "to", "status", "wa_message_id", "occurred_at", "error", "text", "reply_to_message_id")
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    TO_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    WA_MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    OCCURRED_AT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    FROM_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    REPLY_TO_MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    message_id: str
    to: str
    status: str
    wa_message_id: str
    occurred_at: _timestamp_pb2.Timestamp
    error: _messages_pb2.MessageError
    text: str
    reply_to_message_id: str
    def __init__(self, message_id: _Optional[str] = ..., to: _Optional[str] = ..., status: _Optional[str] = ..., wa_message_id: _Optional[str] = ..., occurred_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., error: _Optional[_Union[_messages_pb2.MessageError, _Mapping]] = ..., text: _Optional[str] = ..., reply_to_message_id: _Optional[str] = ..., **kwargs) -> None: ...

class FlowCompletedEvent(_message.Message):
    __slots__ = ("id", "type", "created_at", "data")
    ID_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    id: str
    type: str
    created_at: _timestamp_pb2.Timestamp
    data: _flow_responses_pb2.FlowResponse
    def __init__(self, id: _Optional[str] = ..., type: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., data: _Optional[_Union[_flow_responses_pb2.FlowResponse, _Mapping]] = ...) -> None: ...

class ContactEvent(_message.Message):
    __slots__ = ("id", "type", "created_at", "data")
    ID_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    id: str
    type: str
    created_at: _timestamp_pb2.Timestamp
    data: ContactEventData
    def __init__(self, id: _Optional[str] = ..., type: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., data: _Optional[_Union[ContactEventData, _Mapping]] = ...) -> None: ...

class ContactEventData(_message.Message):
    __slots__ = ("phone_number", "status", "source", "keyword", "error_code", "message_id", "occurred_at")
    PHONE_NUMBER_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    KEYWORD_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    OCCURRED_AT_FIELD_NUMBER: _ClassVar[int]
    phone_number: str
    status: _opt_outs_pb2.OptOutStatus
    source: _opt_outs_pb2.OptOutSource
    keyword: str
    error_code: int
    message_id: str
    occurred_at: _timestamp_pb2.Timestamp
    def __init__(self, phone_number: _Optional[str] = ..., status: _Optional[_Union[_opt_outs_pb2.OptOutStatus, str]] = ..., source: _Optional[_Union[_opt_outs_pb2.OptOutSource, str]] = ..., keyword: _Optional[str] = ..., error_code: _Optional[int] = ..., message_id: _Optional[str] = ..., occurred_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...
