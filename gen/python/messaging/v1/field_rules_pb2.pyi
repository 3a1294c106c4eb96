from buf.validate import validate_pb2 as _validate_pb2
from google.protobuf import descriptor as _descriptor
from typing import ClassVar as _ClassVar

DESCRIPTOR: _descriptor.FileDescriptor
PHONE_NUMBER_FIELD_NUMBER: _ClassVar[int]
phone_number: _descriptor.FieldDescriptor
ID_PREFIX_FIELD_NUMBER: _ClassVar[int]
id_prefix: _descriptor.FieldDescriptor
NOT_BLANK_FIELD_NUMBER: _ClassVar[int]
not_blank: _descriptor.FieldDescriptor
PRINTABLE_ASCII_FIELD_NUMBER: _ClassVar[int]
printable_ascii: _descriptor.FieldDescriptor
NUMERIC_ID_FIELD_NUMBER: _ClassVar[int]
numeric_id: _descriptor.FieldDescriptor
WHATSAPP_PARAMETER_FIELD_NUMBER: _ClassVar[int]
whatsapp_parameter: _descriptor.FieldDescriptor
IP_OR_CIDR_FIELD_NUMBER: _ClassVar[int]
ip_or_cidr: _descriptor.FieldDescriptor
