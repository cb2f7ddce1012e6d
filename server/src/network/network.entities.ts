import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/** A Requirement's own additions to the network allow-list (issue 45): the person's choice alone. */
@Entity('requirement_network')
export class RequirementNetworkEntity {
  @PrimaryColumn('varchar') requirementId!: string;
  @Column('simple-json') allow!: string[];
  @Column('varchar') updatedAt!: string;
}

/** Connections one run's proxy refused to one host and port, counted. */
@Entity('network_blocked')
@Index('network_blocked_run_host', ['runId', 'host', 'port'], { unique: true })
@Index('network_blocked_last_at', ['lastAt'])
@Index('network_blocked_requirement', ['requirementId', 'lastAt'])
export class NetworkBlockedEntity {
  @PrimaryColumn('varchar') id!: string;
  @Column('varchar') requirementId!: string;
  @Column('varchar') runId!: string;
  @Column('varchar') host!: string;
  @Column('integer') port!: number;
  @Column('varchar') method!: string;
  @Column('text') reason!: string;
  @Column('integer') count!: number;
  @Column('varchar') firstAt!: string;
  @Column('varchar') lastAt!: string;
}
