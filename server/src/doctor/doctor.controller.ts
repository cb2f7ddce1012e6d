import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';

import { DoctorService } from './doctor.service';
import { DoctorQueryDto, DoctorReportDto } from './dto/doctor-report.dto';

@ApiTags('manager')
@Controller('doctor')
export class DoctorController {
  constructor(private readonly doctor: DoctorService) {}

  @Get()
  @ApiOperation({
    summary:
      "What `agent-manager doctor` finds for this manager: the agent CLIs and their logins, GitHub, isolation, the store (the dashboard's setup panel)",
  })
  @ApiOkResponse({ type: DoctorReportDto })
  get(@Query() query: DoctorQueryDto): Promise<DoctorReportDto> {
    return this.doctor.report(query.refresh === 'true');
  }
}
