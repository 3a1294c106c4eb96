import datetime

from buf.validate import validate_pb2 as _validate_pb2
from google.api import annotations_pb2 as _annotations_pb2
from google.api import field_behavior_pb2 as _field_behavior_pb2
from google.api import httpbody_pb2 as _httpbody_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from messaging.v1 import field_rules_pb2 as _field_rules_pb2
from messaging.v1 import options_pb2 as _options_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class FlowResponse(_message.Message):
    __slots__ = ("id", "object", "message_id", "flow_token", "flow_id", "source_message_id", "template_id", "response", "files", "received_at")
    ID_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    FROM_FIELD_NUMBER: _ClassVar[int]
    FLOW_TOKEN_FIELD_NUMBER: _ClassVar[int]
    FLOW_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_ID_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    RECEIVED_AT_FIELD_NUMBER: _ClassVar[int]
    id: str
    object: str
    message_id: str
    flow_token: str
    flow_id: str
    source_message_id: str
    template_id: str
    response: _struct_pb2.Struct
    files: _containers.RepeatedCompositeFieldContainer[FlowResponseFile]
    received_at: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[str] = ..., object: _Optional[str] = ..., message_id: _Optional[str] = ..., flow_token: _Optional[str] = ..., flow_id: _Optional[str] = ..., source_message_id: _Optional[str] = ..., template_id: _Optional[str] = ..., response: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., files: _Optional[_Iterable[_Union[FlowResponseFile, _Mapping]]] = ..., received_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., **kwargs) -> None: ...

class FlowResponseFile(_message.Message):
    __slots__ = ("field", "index", "file_name", "mime_type", "size_bytes", "error", "sha256")
    FIELD_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    FILE_NAME_FIELD_NUMBER: _ClassVar[int]
    MIME_TYPE_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    field: str
    index: int
    file_name: str
    mime_type: str
    size_bytes: int
    error: str
    sha256: str
    def __init__(self, field: _Optional[str] = ..., index: _Optional[int] = ..., file_name: _Optional[str] = ..., mime_type: _Optional[str] = ..., size_bytes: _Optional[int] = ..., error: _Optional[str] = ..., sha256: _Optional[str] = ...) -> None: ...

class ListFlowResponsesRequest(_message.Message):
    __slots__ = ("page_size", "page_token", "flow_id", "flow_token", "message_id", "received_after", "received_before")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    FLOW_ID_FIELD_NUMBER: _ClassVar[int]
    FLOW_TOKEN_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    RECEIVED_AFTER_FIELD_NUMBER: _ClassVar[int]
    RECEIVED_BEFORE_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    flow_id: str
    flow_token: str
    message_id: str
    received_after: _timestamp_pb2.Timestamp
    received_before: _timestamp_pb2.Timestamp
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., flow_id: _Optional[str] = ..., flow_token: _Optional[str] = ..., message_id: _Optional[str] = ..., received_after: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., received_before: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListFlowResponsesResponse(_message.Message):
    __slots__ = ("object", "data", "total", "next_page_token")
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    object: str
    data: _containers.RepeatedCompositeFieldContainer[FlowResponse]
    total: int
    next_page_token: str
    def __init__(self, object: _Optional[str] = ..., data: _Optional[_Iterable[_Union[FlowResponse, _Mapping]]] = ..., total: _Optional[int] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GetFlowResponseRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class GetFlowResponseResponse(_message.Message):
    __slots__ = ("flow_response",)
    FLOW_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    flow_response: FlowResponse
    def __init__(self, flow_response: _Optional[_Union[FlowResponse, _Mapping]] = ...) -> None: ...

class GetFlowResponseFileRequest(_message.Message):
    __slots__ = ("id", "index")
    ID_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    id: str
    index: int
    def __init__(self, id: _Optional[str] = ..., index: _Optional[int] = ...) -> None: ...
