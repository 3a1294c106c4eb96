import datetime

from buf.validate import validate_pb2 as _validate_pb2
from google.api import annotations_pb2 as _annotations_pb2
from google.api import field_behavior_pb2 as _field_behavior_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from messaging.v1 import field_rules_pb2 as _field_rules_pb2
from messaging.v1 import options_pb2 as _options_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class OptOutStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OPT_OUT_STATUS_UNSPECIFIED: _ClassVar[OptOutStatus]
    OPT_OUT_STATUS_OPTED_OUT: _ClassVar[OptOutStatus]
    OPT_OUT_STATUS_OPTED_IN: _ClassVar[OptOutStatus]

class OptOutSource(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OPT_OUT_SOURCE_UNSPECIFIED: _ClassVar[OptOutSource]
    OPT_OUT_SOURCE_REPLY: _ClassVar[OptOutSource]
    OPT_OUT_SOURCE_NETWORK_ERROR: _ClassVar[OptOutSource]
    OPT_OUT_SOURCE_CONSOLE: _ClassVar[OptOutSource]
OPT_OUT_STATUS_UNSPECIFIED: OptOutStatus
OPT_OUT_STATUS_OPTED_OUT: OptOutStatus
OPT_OUT_STATUS_OPTED_IN: OptOutStatus
OPT_OUT_SOURCE_UNSPECIFIED: OptOutSource
OPT_OUT_SOURCE_REPLY: OptOutSource
OPT_OUT_SOURCE_NETWORK_ERROR: OptOutSource
OPT_OUT_SOURCE_CONSOLE: OptOutSource

class OptOut(_message.Message):
    __slots__ = ("phone_number", "object", "status", "source", "keyword", "error_code", "message_id", "created_at", "updated_at")
    PHONE_NUMBER_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    KEYWORD_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    phone_number: str
    object: str
    status: OptOutStatus
    source: OptOutSource
    keyword: str
    error_code: int
    message_id: str
    created_at: _timestamp_pb2.Timestamp
    updated_at: _timestamp_pb2.Timestamp
    def __init__(self, phone_number: _Optional[str] = ..., object: _Optional[str] = ..., status: _Optional[_Union[OptOutStatus, str]] = ..., source: _Optional[_Union[OptOutSource, str]] = ..., keyword: _Optional[str] = ..., error_code: _Optional[int] = ..., message_id: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListOptOutsRequest(_message.Message):
    __slots__ = ("page_size", "page_token", "updated_after", "phone_number")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AFTER_FIELD_NUMBER: _ClassVar[int]
    PHONE_NUMBER_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    updated_after: _timestamp_pb2.Timestamp
    phone_number: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., updated_after: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., phone_number: _Optional[str] = ...) -> None: ...

class ListOptOutsResponse(_message.Message):
    __slots__ = ("object", "data", "total", "next_page_token")
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    object: str
    data: _containers.RepeatedCompositeFieldContainer[OptOut]
    total: int
    next_page_token: str
    def __init__(self, object: _Optional[str] = ..., data: _Optional[_Iterable[_Union[OptOut, _Mapping]]] = ..., total: _Optional[int] = ..., next_page_token: _Optional[str] = ...) -> None: ...
